package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// DownloadRequest asks a node to download a file into a storage
// (POST /nodes/{node}/storage/{storage}/download-url).
type DownloadRequest struct {
	Node    string
	Storage string
	URL     string
	// Content is "iso" or "import" (or "vztmpl").
	Content  string
	FileName string
	// Checksum and ChecksumAlgorithm are verified by Proxmox after download.
	Checksum          string
	ChecksumAlgorithm string
	// Decompression algorithm of the URL's payload ("gz", "lzo", "zst", "bz2"), if any.
	Compression string
	// VerifyCertificates of the download server (Proxmox default: true).
	VerifyCertificates *bool
}

// VolumeID is the volume the download creates: <storage>:<content>/<file>.
func (r DownloadRequest) VolumeID() string {
	return fmt.Sprintf("%s:%s/%s", r.Storage, r.Content, r.FileName)
}

// DownloadURL runs the download task on the node and waits for it.
func (c *Client) DownloadURL(ctx context.Context, r DownloadRequest) error {
	p := map[string]any{"url": r.URL, "content": r.Content, "filename": r.FileName}
	if r.Checksum != "" {
		p["checksum"] = r.Checksum
		p["checksum-algorithm"] = r.ChecksumAlgorithm
	}
	if r.Compression != "" {
		p["compression"] = r.Compression
	}
	if r.VerifyCertificates != nil {
		p["verify-certificates"] = *r.VerifyCertificates
	}
	path := fmt.Sprintf("/nodes/%s/storage/%s/download-url", r.Node, r.Storage)
	// the file shows once the task ends: a list read meanwhile is old
	defer c.vols.changed(r.Node, r.Storage)
	// Sending it again is safe once it is known not to have run: an answer
	// lost to a server or proxy error may hide a download that started, so
	// that download is awaited, or its file found, before another is sent.
	// A refusal ("refusing to override existing file") is not repeated.
	return DefaultRetry.Retry(ctx, fmt.Sprintf("downloading %s to %s on node %s", r.FileName, r.Storage, r.Node), true,
		func(ctx context.Context) error {
			// raw: Storage.DownloadURL needs Node and Storage read first (2 GETs),
			// and its *Task.Wait ignores a failed exit status
			err := c.startTaskAt(ctx, "after-download-started", func(upid *string) error { return c.post(ctx, path, p, upid) })
			if err == nil || isTaskFailure(err) || (!IsServerError(err) && !Retryable(err, true)) {
				return err
			}
			// PVE's task id is the file name (encode_text leaves plain
			// names as they are)
			if running, _ := c.ForeignActiveTasks(ctx, r.Node, "download", r.FileName); len(running) > 0 {
				Logf(ctx, "a download of %s on node %s is running already (the answer to the request was lost); waiting for it", r.FileName, r.Node)
				return c.WaitTask(ctx, running[0])
			}
			if _, found, ferr := c.findVolumeOnce(ctx, r.Node, r.Storage, r.VolumeID()); ferr == nil && found {
				return nil
			}
			return err
		})
}

// Volume is one entry of a storage's content list.
type Volume struct {
	VolID   string
	Content string
	Format  string
	// Size in bytes.
	Size uint64
}

// StorageContent lists the volumes of one content type in a storage on node.
func (c *Client) StorageContent(ctx context.Context, node, storage, content string) ([]Volume, error) {
	var out []Volume
	err := DefaultRetry.Retry(ctx, fmt.Sprintf("listing storage %s on node %s", storage, node), true,
		func(ctx context.Context) error {
			var err error
			out, err = c.storageContentOnce(ctx, node, storage, content)
			return err
		})
	return out, err
}

func (c *Client) storageContentOnce(ctx context.Context, node, storage, content string) ([]Volume, error) {
	var items []struct {
		VolID   string      `json:"volid"`
		Content string      `json:"content"`
		Format  string      `json:"format"`
		Size    json.Number `json:"size"`
	}
	path := fmt.Sprintf("/nodes/%s/storage/%s/content", node, storage)
	if content != "" {
		path += "?content=" + url.QueryEscape(content)
	}
	at, gen := time.Now(), c.vols.gen(node, storage)
	// raw: StorageContent has no `content` field and holds size as a plain
	// uint64; Storage.GetContent needs Node and Storage read first
	if err := c.get(ctx, path, &items); err != nil {
		return nil, err
	}
	out := make([]Volume, 0, len(items))
	for _, it := range items {
		size, _ := it.Size.Int64()
		out = append(out, Volume{VolID: it.VolID, Content: it.Content, Format: it.Format, Size: uint64(max(size, 0))})
	}
	if content == "" {
		c.vols.keep(node, storage, at, gen, out)
	}
	return out, nil
}

// FindVolume looks a volume up in its storage's content list.
func (c *Client) FindVolume(ctx context.Context, node, storage, volid string) (Volume, bool, error) {
	vols, err := c.StorageContent(ctx, node, storage, "")
	return findVolume(vols, volid, err)
}

// findVolumeOnce is FindVolume without retries.
func (c *Client) findVolumeOnce(ctx context.Context, node, storage, volid string) (Volume, bool, error) {
	vols, err := c.storageContentOnce(ctx, node, storage, "")
	return findVolume(vols, volid, err)
}

func findVolume(vols []Volume, volid string, err error) (Volume, bool, error) {
	if err != nil {
		return Volume{}, false, err
	}
	for _, v := range vols {
		if v.VolID == volid {
			return v, true, nil
		}
	}
	return Volume{}, false, nil
}

// VolumeSize is the size of the disk a volume holds, in bytes (GET
// .../content/{volume}: pve-storage volume_size_info, which asks qemu-img
// for an image's virtual size). A content list shows the size of the file
// instead, which for a qcow2 or vmdk image is less.
func (c *Client) VolumeSize(ctx context.Context, node, storage, volid string) (uint64, error) {
	var info struct {
		Size json.Number `json:"size"`
	}
	path := fmt.Sprintf("/nodes/%s/storage/%s/content/%s", node, storage, url.PathEscape(volid))
	// raw: go-proxmox has no call or type for a volume's attributes
	err := DefaultRetry.Retry(ctx, fmt.Sprintf("reading the size of %s on node %s", volid, node), true,
		func(ctx context.Context) error { return c.get(ctx, path, &info) })
	if err != nil {
		return 0, err
	}
	size, err := info.Size.Int64()
	if err != nil || size < 0 {
		return 0, fmt.Errorf("Proxmox answered size %q for %s on node %s", info.Size, volid, node)
	}
	return uint64(size), nil
}

// DeleteVolume removes a volume; a volume that is already gone is success.
// Proxmox fails the delete task of a missing file ("unlink ... No such file
// or directory"), so the content list is asked first and after a failure.
func (c *Client) DeleteVolume(ctx context.Context, node, storage, volid string) error {
	// the volume goes once the task ends: a list read meanwhile is old
	defer c.vols.changed(node, storage)
	if _, found, err := c.FindVolume(ctx, node, storage, volid); err == nil && !found {
		return nil
	}
	path := fmt.Sprintf("/nodes/%s/storage/%s/content/%s", node, storage, url.PathEscape(volid))
	what := fmt.Sprintf("deleting %s on node %s", volid, node)
	// Idempotent: a delete is sent again only after the content list
	// showed the volume still there, and one that went in the meantime
	// (an answer lost after the delete ran) ends in that check.
	return DefaultRetry.Retry(ctx, what, true, func(ctx context.Context) error {
		// raw: Storage.DeleteContent needs Node and Storage read first
		err := c.startTask(ctx, func(upid *string) error { return c.delete(ctx, path, nil, upid) })
		if err == nil || IsNotFound(err) {
			return nil
		}
		if _, found, ferr := c.FindVolume(ctx, node, storage, volid); ferr == nil && !found {
			return nil
		}
		return err
	})
}
