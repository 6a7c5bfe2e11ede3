package pve

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Storage endpoints follow pve-storage src/PVE/API2/Storage/{Status,Content}.pm.

func (s *Server) hNodeStorages(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(r.p["node"])
	out := []map[string]any{}
	for _, st := range n.storages {
		// storages the caller may audit or allocate on (Status.pm index)
		if s.checkAnyLocked(r.user, "/storage/"+st.spec.ID, "Datastore.Audit", "Datastore.AllocateSpace") != nil {
			continue
		}
		if c := r.p["content"]; c != "" && !st.hasContent(c) {
			continue
		}
		if id := r.p["storage"]; id != "" && st.spec.ID != id {
			continue
		}
		out = append(out, storageStatus(st))
	}
	return out, nil
}

func storageStatus(st *storage) map[string]any {
	total, used := st.total(), st.used()
	return map[string]any{
		"storage": st.spec.ID, "type": st.spec.Type, "content": strings.Join(st.spec.Content, ","),
		"active": 1, "enabled": 1, "shared": 0, "total": total, "used": used, "avail": total - used,
		"used_fraction": float64(used) / float64(total),
	}
}

// storageLocked returns the node's storage or PVE's error for an unknown one
// (PVE::Storage::storage_config / storage_check_enabled).
func (s *Server) storageLocked(nodeName, id string) (*storage, error) {
	n := s.node(nodeName)
	if st := n.storage(id); st != nil {
		return st, nil
	}
	for _, other := range s.nodes {
		if other.storage(id) != nil {
			return nil, fail("storage '%s' is not available on node '%s'\n", id, nodeName)
		}
	}
	return nil, fail("storage '%s' does not exist\n", id)
}

func (s *Server) hStorageStatus(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.storageLocked(r.p["node"], r.p["storage"])
	if err != nil {
		return nil, err
	}
	return storageStatus(st), nil
}

func (s *Server) hContentList(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.storageLocked(r.p["node"], r.p["storage"])
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(st.volumes)) {
		v := st.volumes[name]
		if c := r.p["content"]; c != "" && v.content != c {
			continue
		}
		if id := r.p["vmid"]; id != "" && strconv.Itoa(v.owner) != id {
			continue
		}
		// only volumes the caller may read (Content.pm index)
		if s.checkVolumeAccessLocked(r.user, 0, v.volid()) != nil {
			continue
		}
		out = append(out, volumeEntry(v))
	}
	return out, nil
}

// volumeEntry is one item of a content list. Files in a directory storage
// (ISOs, import images) are listed with the size of the file
// (pve-storage Plugin.pm get_subdir_files: $st->size), which for a qcow2
// image is less than its virtual size; GET .../content/{volume} reports the
// virtual size (volume_size_info).
func volumeEntry(v *volume) map[string]any {
	size := v.size
	if v.content != "images" && v.content != "rootdir" {
		size = v.fileBytes()
	}
	e := map[string]any{"volid": v.volid(), "content": v.content, "format": v.format, "size": size, "ctime": v.ctime}
	if v.owner != 0 {
		e["vmid"] = v.owner
	}
	if v.content == "images" || v.content == "rootdir" {
		e["used"] = v.written
	}
	if v.parent != "" {
		e["parent"] = v.parent
	}
	return e
}

// realVolumeID is Content.pm's $real_volume_id: a bare volname is taken
// relative to the storage in the path.
func realVolumeID(storageID, volume string) (string, string, error) {
	if sid, name, ok := strings.Cut(volume, ":"); ok {
		if sid != storageID {
			return "", "", param1("volume", fmt.Sprintf("volume id '%s' does not belong to storage '%s'", volume, storageID))
		}
		return sid, name, nil
	}
	return storageID, volume, nil
}

func (s *Server) hContentGet(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.storageLocked(r.p["node"], r.p["storage"])
	if err != nil {
		return nil, err
	}
	sid, name, err := realVolumeID(st.spec.ID, r.p["volume"])
	if err != nil {
		return nil, err
	}
	if err := s.checkVolumeAccessLocked(r.user, 0, sid+":"+name); err != nil {
		return nil, err
	}
	v, ok := st.volumes[name]
	if !ok {
		return nil, fail("volume_size_info on '%s:%s' failed - no format\n", sid, name)
	}
	return map[string]any{"path": volumePath(st, v), "size": v.size, "used": v.written, "format": v.format}, nil
}

func volumePath(st *storage, v *volume) string {
	if st.spec.Type == "lvmthin" {
		return "/dev/pve/" + path.Base(v.name)
	}
	dir := map[string]string{"iso": "template/iso", "vztmpl": "template/cache", "import": "import", "snippets": "snippets", "images": "images"}[v.content]
	return "/var/lib/vz/" + dir + "/" + strings.SplitN(v.name, "/", 2)[1]
}

func (s *Server) hContentDelete(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.storageLocked(r.p["node"], r.p["storage"])
	if err != nil {
		return nil, err
	}
	sid, name, err := realVolumeID(st.spec.ID, r.p["volume"])
	if err != nil {
		return nil, err
	}
	// Content.pm delete: Datastore.Allocate on the storage (backups, which
	// the lab has none of, need less)
	if err := s.checkLocked(r.user, "/storage/"+sid, "Datastore.Allocate"); err != nil {
		return nil, err
	}
	id := sid
	if v, ok := st.volumes[name]; ok && v.owner != 0 {
		id = fmt.Sprintf("%d@%s", v.owner, sid)
	}
	return s.startTask(r.p["node"], "imgdel", id, r.user, func(ctx context.Context, l *taskLog) error {
		if err := s.sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		v, ok := st.volumes[name]
		if !ok {
			if st.spec.Type == "lvmthin" {
				return fmt.Errorf("lvremove 'pve/%s' error:   Failed to find logical volume \"pve/%s\"\n", name, name)
			}
			return fmt.Errorf("unlink '%s' failed - No such file or directory\n", volumePath(st, &volume{name: name, content: contentOfVolname(name)}))
		}
		if err := s.volumeInUseLocked(st, v); err != nil {
			return err
		}
		delete(st.volumes, name)
		l.Logf("Removed volume '%s:%s'", sid, name)
		return nil
	}), nil
}

func contentOfVolname(name string) string {
	dir, _, _ := strings.Cut(name, "/")
	switch dir {
	case "iso", "import", "snippets":
		return dir
	case "vztmpl":
		return "vztmpl"
	}
	return "images"
}

// volumeInUseLocked refuses to free a base volume that linked clones use,
// or a disk of a running VM (the LV is open).
func (s *Server) volumeInUseLocked(st *storage, v *volume) error {
	for _, other := range st.volumes {
		if other.parent == v.name {
			return fmt.Errorf("base volume '%s' is still in use by linked clones\n", v.name)
		}
	}
	if v.owner != 0 {
		if vmv, ok := s.vms[v.owner]; ok && vmv.running && vmv.node == st.node && st.spec.Type == "lvmthin" {
			return fmt.Errorf("lvremove 'pve/%s' error:   Logical volume pve/%s in use.\n", v.name, v.name)
		}
	}
	return nil
}

var (
	isoExtRE    = regexp.MustCompile(`(?i)^[^/]+\.(?:iso|img)$`)
	vztmplExtRE = regexp.MustCompile(`(?i)^[^/]+\.(tar|tar\.(gz|xz|zst|bz2))$`)
	importExtRE = regexp.MustCompile(`^[a-zA-Z0-9\-\.\+\=\_]+\.(ova|qcow2|raw|vmdk)$`)
	unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)
)

// normalizeFilename is PVE::Storage::normalize_content_filename.
func normalizeFilename(name string) string {
	name = strings.TrimRight(name, "\n")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return unsafeChars.ReplaceAllString(name, "_")
}

// hDownloadURL is download_url (Status.pm): file-based storage only, the
// content type must be enabled, file names must carry the right extension,
// an existing file is not overwritten. The lab does not reach the network:
// the file's content is synthetic (RemoteFileContent), so checksums are
// verified against it, and hosts under ".invalid" fail to resolve.
func (s *Server) hDownloadURL(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.storageLocked(r.p["node"], r.p["storage"])
	if err != nil {
		return nil, err
	}
	if st.spec.Type != "dir" {
		return nil, fail("can't upload to storage type '%s', not a file based storage!\n", st.spec.Type)
	}
	content, rawURL := r.p["content"], r.p["url"]
	if !st.hasContent(content) {
		return nil, fail("storage '%s' is not configured for content-type '%s'\n", st.spec.ID, content)
	}
	filename := normalizeFilename(r.p["filename"])
	format := content
	switch content {
	case "iso":
		if !isoExtRE.MatchString(filename) {
			return nil, param1("filename", "wrong file extension")
		}
	case "vztmpl":
		if !vztmplExtRE.MatchString(filename) {
			return nil, param1("filename", "wrong file extension")
		}
		format = "tgz"
	case "import":
		m := importExtRE.FindStringSubmatch(filename)
		if m == nil {
			return nil, param1("filename", "invalid filename or wrong extension")
		}
		format = m[1]
	}
	algo, sum := r.p["checksum-algorithm"], r.p["checksum"]
	comp := r.p["compression"]
	name := content + "/" + filename
	dest := volumePath(st, &volume{name: name, content: content})
	// The worker id is the file name (encode_text'ed; normalised names need
	// no escaping): "must not pass : or the like as w-ID" (Status.pm).
	return s.startTask(r.p["node"], "download", filename, r.user, func(ctx context.Context, l *taskLog) error {
		if comp != "" {
			if content != "iso" {
				return fmt.Errorf("decompression not supported for %s\n", content)
			}
			if comp != "gz" && comp != "lzo" && comp != "zst" && comp != "bz2" {
				return fmt.Errorf("no decompression method found\n")
			}
		}
		l.Logf("downloading %s to %s", rawURL, dest)
		// wget never sends a URL's #fragment: what arrives, and so the
		// file, is the same without it
		fetched, _, _ := strings.Cut(rawURL, "#")
		data := RemoteFileContent(fetched)
		s.mu.Lock()
		_, exists := st.volumes[name]
		s.mu.Unlock()
		if exists {
			if algo == "" {
				return fmt.Errorf("refusing to override existing file '%s'\n", dest)
			}
			got := checksum(algo, data)
			if strings.EqualFold(got, sum) {
				l.Logf("calculating checksum of existing file...OK, got correct file already, no need to download")
				return nil
			}
			return fmt.Errorf("checksum mismatch: got '%s' != expect '%s', aborting\n", got, sum)
		}
		u, _ := url.Parse(rawURL)
		if u == nil || strings.HasSuffix(u.Hostname(), ".invalid") || u.Hostname() == "" {
			l.Logf("wget: unable to resolve host address '%s'", u.Hostname())
			return fmt.Errorf("download failed: command '/usr/bin/wget --progress=dot:giga -O %s.tmp_dwnl.%d %s' failed: exit code 4\n", dest, 1234, rawURL)
		}
		if fetch := s.opts.Fetch; fetch != nil {
			if err := fetch(ctx, fetched); err != nil {
				// wget's words for an HTTP error answer, then its exit code 8.
				l.Logf("HTTP request sent, awaiting response... %s", err)
				l.Logf("ERROR %s.", strings.Replace(err.Error(), " ", ": ", 1))
				return fmt.Errorf("download failed: command '/usr/bin/wget --progress=dot:giga -O %s.tmp_dwnl.%d %s' failed: exit code 8\n", dest, 1234, rawURL)
			}
		}
		size, fileSize := remoteFileSize(content, format)
		if err := s.sleep(ctx, downloadDuration(fileSize)); err != nil {
			return err
		}
		if algo != "" {
			got := checksum(algo, data)
			if !strings.EqualFold(got, sum) {
				return fmt.Errorf("checksum mismatch: got '%s' != expect '%s'\n", got, sum)
			}
			l.Logf("calculating checksum...OK, checksum verified")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if st.used()+fileSize > st.total() {
			return fmt.Errorf("download failed: command '/usr/bin/wget --progress=dot:giga -O %s.tmp_dwnl.%d %s' failed: exit code 3\n", dest, 1234, rawURL)
		}
		st.volumes[name] = &volume{
			storage: st.spec.ID, name: name, content: content, format: format, size: size, fileSize: fileSize,
			ctime: time.Now().Unix(), image: Image{Volume: st.spec.ID + ":" + name, SourceURL: fetched},
		}
		l.Logf("download of '%s' to '%s' finished", rawURL, dest)
		return nil
	}), nil
}

// RemoteFileContent is the synthetic content the lab "downloads" from a URL
// (no network is used); tests compute expected checksums from it.
func RemoteFileContent(rawURL string) []byte {
	return []byte("proxmoxtalos lab download of " + rawURL + "\n")
}

// remoteFileSize is the (virtual) size of a downloaded file and the size of
// the file itself. Disk images are as large as Talos's (imager
// pkg/imager/profile/default.go MinRAWDiskSize, 1246 MiB, the disk size of
// the Image Factory's nocloud and metal images); a qcow2 or vmdk holds that
// disk in a smaller file.
func remoteFileSize(content, format string) (size, fileSize int64) {
	switch {
	case content == "import" && format == "raw":
		return 1246 << 20, 1246 << 20
	case content == "import" && (format == "qcow2" || format == "vmdk"):
		return 1246 << 20, 300 << 20
	case content == "import":
		return 300 << 20, 300 << 20 // an OVA archive
	}
	return 128 << 20, 128 << 20
}

func checksum(algo string, data []byte) string {
	var h hash.Hash
	switch algo {
	case "md5":
		h = md5.New()
	case "sha1":
		h = sha1.New()
	case "sha224":
		h = sha256.New224()
	case "sha256":
		h = sha256.New()
	case "sha384":
		h = sha512.New384()
	default:
		h = sha512.New()
	}
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}
