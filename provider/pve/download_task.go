package pve

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/backoff"
)

// DownloadTask is the latest download-url task for one file on a node.
type DownloadTask struct {
	UPID string
	// Running: the task has not ended; otherwise Status is its exit status.
	Running bool
	Status  string
	// URL is what it downloads, from its log's first line ("downloading
	// <url> to <path>", pve-common PVE/Tools.pm download_file_from_url).
	URL string
}

// LastDownload finds the newest download task for file on node (PVE's task
// id is the file name).
func (c *Client) LastDownload(ctx context.Context, node, file string) (DownloadTask, bool, error) {
	var tasks []struct {
		UPID   string `json:"upid"`
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	// raw: see ForeignActiveTasks
	path := fmt.Sprintf("/nodes/%s/tasks?typefilter=download&limit=500", node)
	if err := c.get(ctx, path, &tasks); err != nil {
		return DownloadTask{}, false, err
	}
	for _, t := range tasks { // newest first
		if t.ID != file {
			continue
		}
		id, err := ParseUPID(t.UPID)
		if err != nil {
			return DownloadTask{}, false, err
		}
		d := DownloadTask{UPID: t.UPID, Running: t.Status == "", Status: t.Status}
		d.URL = c.downloadURLOf(ctx, id, d.Running)
		return d, true, nil
	}
	return DownloadTask{}, false, nil
}

// downloadURLOf reads the URL from a download task's log. A task that
// runs may not have written its first line yet (the worker forks, then
// download_file_from_url prints it), and a task of ours read then would
// look like another's and be downloaded twice: a running task's log is
// read again, a few times over about two seconds, until the line shows.
func (c *Client) downloadURLOf(ctx context.Context, id UPID, running bool) string {
	attempts := 1
	if running {
		attempts = 8
	}
	var url string
	_ = backoff.Loop{Policy: backoff.Policy{Initial: 25 * time.Millisecond, Max: 500 * time.Millisecond}, Attempts: attempts}.
		Run(ctx, func(ctx context.Context, _ int) (bool, error) {
			for _, l := range c.taskLogHead(ctx, id, 5) {
				if rest, ok := strings.CutPrefix(l, "downloading "); ok {
					url, _, _ = strings.Cut(rest, " to ")
					return true, nil
				}
			}
			return false, nil
		})
	return url
}

// taskLogHead returns up to n first lines of a task's log; best effort.
func (c *Client) taskLogHead(ctx context.Context, id UPID, n int) []string {
	var lines []taskLogLine
	// raw: see taskLogTail
	path := fmt.Sprintf("/nodes/%s/tasks/%s/log?start=0&limit=%d", id.Node, url.PathEscape(id.Raw), n)
	if err := c.get(ctx, path, &lines); err != nil {
		return nil
	}
	var out []string
	for _, l := range lines {
		out = append(out, strings.TrimSpace(l.T))
	}
	return out
}
