package pve

import (
	"context"
	"fmt"
	"net/url"
	"strings"
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
		d.URL = c.downloadURLOf(ctx, id)
		return d, true, nil
	}
	return DownloadTask{}, false, nil
}

// downloadURLOf reads the URL from a download task's log: its first
// line, once the worker has written it (a task that has just forked may
// not have yet: "" then).
func (c *Client) downloadURLOf(ctx context.Context, id UPID) string {
	for _, l := range c.taskLogHead(ctx, id, 5) {
		if rest, ok := strings.CutPrefix(l, "downloading "); ok {
			url, _, _ := strings.Cut(rest, " to ")
			return url
		}
	}
	return ""
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
