package pve

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pveapi"
)

// newDiskRE is qemu-server's $NEW_DISK_RE: "<storage>:<size in GiB>".
var newDiskRE = regexp.MustCompile(`^(([^/:\s]+):)?(\d+(\.\d+)?)$`)

// cloudInitSize is CLOUDINIT_DISK_SIZE (4 MiB).
const cloudInitSize = 4 << 20

// checkDriveParams is $check_drive_param and $check_storage_access of
// qemu-server src/PVE/API2/Qemu.pm: the synchronous checks done before a
// worker is forked, answered as parameter errors.
// defaultStorage is create_vm's "storage" parameter ("" on config updates).
func (s *Server) checkDriveParamsLocked(nodeName string, params map[string]string, defaultStorage string) error {
	for _, key := range slices.Sorted(maps.Keys(params)) {
		if !isDriveKey(key) {
			continue
		}
		d, err := s.parseDrive(key, params[key])
		if err != nil {
			return param1(key, "unable to parse drive options")
		}
		file := d["file"]
		if src, ok := d["import-from"]; ok {
			m := newDiskRE.FindStringSubmatch(file)
			if m == nil || m[3] != "0" {
				return param1(key, "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>")
			}
			if key == "efidisk0" {
				for _, req := range []string{"efitype", "pre-enrolled-keys"} {
					if _, ok := d[req]; !ok {
						return param1(key, fmt.Sprintf("need to specify '%s' when using 'import-from'", req))
					}
				}
			}
			if sid, name, ok := strings.Cut(src, ":"); ok {
				st, err := s.storageLocked(nodeName, sid)
				if err != nil {
					return err
				}
				if c := contentOfStorageVolname(st, name); c != "images" && c != "import" {
					return param1(key, fmt.Sprintf("%s has wrong type '%s' - needs to be 'images' or 'import'", src, c))
				}
			}
		}
		if m := newDiskRE.FindStringSubmatch(file); m != nil {
			if d["media"] == "cdrom" {
				continue
			}
			sid := m[2]
			if sid == "" {
				sid = defaultStorage
			}
			if sid == "" {
				return fail("no storage ID specified (and no default storage)\n")
			}
			st, err := s.storageLocked(nodeName, sid)
			if err != nil {
				return err
			}
			if !st.hasContent("images") {
				return param1("storage", fmt.Sprintf("storage '%s' does not support vm images", sid))
			}
			continue
		}
		sid, name, ok := strings.Cut(file, ":")
		if !ok || name == "cloudinit" {
			continue
		}
		st, err := s.storageLocked(nodeName, sid)
		if err != nil {
			return err
		}
		c := contentOfStorageVolname(st, name)
		if c == "iso" && d["media"] != "cdrom" {
			return param1(key, "explicit 'media=cdrom' is required for iso images")
		}
		if c != "images" && c != "iso" {
			return param1(key, "content type needs to be 'images' or 'iso'")
		}
	}
	return nil
}

// contentOfStorageVolname is parse_volname's vtype for a volname.
func contentOfStorageVolname(st *storage, name string) string {
	if st.spec.Type == "lvmthin" {
		return "images"
	}
	return contentOfVolname(name)
}

// createDisksLocked is create_disks: it allocates new volumes
// ("<storage>:<GiB>", "<storage>:cloudinit", imports) and checks references
// to existing ones. It returns the drive strings to write and the volumes
// it created (freed by the caller on failure).
func (s *Server) createDisksLocked(nodeName string, vmid int, conf, settings map[string]string, defaultStorage string, template bool, l *taskLog) (map[string]string, []*volume, error) {
	dc := diskCreate{node: nodeName, vmid: vmid, conf: conf, defaultStorage: defaultStorage, template: template, l: l}
	res := map[string]string{}
	var created []*volume
	for _, key := range slices.Sorted(maps.Keys(settings)) {
		if !isDriveKey(key) {
			continue
		}
		d, err := s.parseDrive(key, settings[key])
		if err != nil {
			return nil, created, err
		}
		file := d["file"]
		sid, name, _ := strings.Cut(file, ":")
		var v *volume
		switch {
		case file == "" || file == "none" || file == "cdrom":
			delete(d, "size")
		case name == "cloudinit" || file == "cloudinit":
			v, err = s.createCloudInitLocked(dc, key, d, sid, res)
		case newDiskRE.MatchString(file):
			v, err = s.createNewDiskLocked(dc, key, d, newDiskRE.FindStringSubmatch(file))
		default:
			err = s.useExistingVolumeLocked(nodeName, file, d)
		}
		if v != nil {
			created = append(created, v)
		}
		if err != nil {
			return nil, created, err
		}
		if sz, ok := d["size"]; ok {
			if n, err := strconv.ParseInt(sz, 10, 64); err == nil {
				d["size"] = pveapi.FormatSize(n)
			}
		}
		res[key] = s.printDrive(key, d)
	}
	return res, created, nil
}

// diskCreate is what create_disks knows of the VM whose drives it makes.
type diskCreate struct {
	node           string
	vmid           int
	conf           map[string]string
	defaultStorage string
	template       bool
	l              *taskLog
}

// createCloudInitLocked allocates the VM's cloud-init volume for drive key
// ("<storage>:cloudinit"); only one drive may hold one.
func (s *Server) createCloudInitLocked(dc diskCreate, key string, d map[string]string, sid string, res map[string]string) (*volume, error) {
	if sid == "cloudinit" {
		sid = dc.defaultStorage
	}
	if sid == "" {
		return nil, fmt.Errorf("no storage ID specified (and no default storage)\n")
	}
	if other := s.cloudInitKey(dc.conf, key, res); other != "" {
		return nil, fmt.Errorf("%s - cloud-init drive is already attached at '%s'\n", key, other)
	}
	st, err := s.storageLocked(dc.node, sid)
	if err != nil {
		return nil, err
	}
	volname := fmt.Sprintf("vm-%d-cloudinit", dc.vmid)
	format := "raw"
	if st.spec.Type == "dir" {
		format = "qcow2"
		volname = fmt.Sprintf("%d/%s.qcow2", dc.vmid, volname)
	}
	v, err := s.allocVolumeLocked(st, dc.vmid, volname, format, cloudInitSize)
	if err != nil {
		return nil, err
	}
	d["file"] = v.volid()
	d["media"] = "cdrom"
	delete(d, "format")
	return v, nil
}

// createNewDiskLocked allocates a new disk for drive key
// ("[<storage>:]<GiB>", m is newDiskRE's match), empty or imported from
// import-from; EFI vars and TPM state disks have their fixed sizes.
func (s *Server) createNewDiskLocked(dc diskCreate, key string, d map[string]string, m []string) (*volume, error) {
	sid := m[2]
	if sid == "" {
		sid = dc.defaultStorage
	}
	if sid == "" {
		return nil, fmt.Errorf("no storage ID specified (and no default storage)\n")
	}
	st, err := s.storageLocked(dc.node, sid)
	if err != nil {
		return nil, err
	}
	gib, _ := strconv.ParseFloat(m[3], 64)
	size := int64(gib * float64(1<<30))
	var img Image
	var written int64
	if src, ok := d["import-from"]; ok {
		srcVol, err := s.volumeLocked(dc.node, src)
		if err != nil {
			return nil, fmt.Errorf("cannot import from '%s' - %s", src, errorText(err))
		}
		size, img, written = srcVol.size, srcVol.image, srcVol.size
		if img.Volume == "" {
			img.Volume = srcVol.volid()
		}
		delete(d, "import-from")
		dc.l.Logf("importing disk '%s' to VM %d ...", src, dc.vmid)
	}
	switch key {
	case "efidisk0": // OVMF vars: 4m or 2m (128K) templates
		size = 4 << 20
		if d["efitype"] != "4m" {
			size = 128 << 10
		}
	case "tpmstate0": // TPMSTATE_DISK_SIZE
		size = 4 << 20
	}
	if size <= 0 {
		return nil, fmt.Errorf("unable to create image: size of disk '%s' must be greater than zero\n", key)
	}
	format := d["format"]
	if format == "" {
		format = "raw"
		if st.spec.Type == "dir" {
			format = "qcow2"
		}
	}
	v, err := s.allocVolumeLocked(st, dc.vmid, s.freeDiskNameLocked(st, dc.vmid, format, dc.template), format, size)
	if err != nil {
		return nil, err
	}
	v.image, v.written = img, written
	d["file"] = v.volid()
	d["size"] = strconv.FormatInt(size, 10)
	delete(d, "format")
	dc.l.Logf("%s: successfully created disk '%s'", key, s.printDrive(key, d))
	return v, nil
}

// useExistingVolumeLocked checks a drive's reference to an existing volume,
// which must hold images or an ISO, and takes its size.
func (s *Server) useExistingVolumeLocked(nodeName, file string, d map[string]string) error {
	v, err := s.volumeLocked(nodeName, file)
	if err != nil {
		return err
	}
	if v.content != "images" && v.content != "iso" {
		return fmt.Errorf("cannot use volume %s - content type needs to be 'images' or 'iso'", file)
	}
	d["size"] = strconv.FormatInt(v.size, 10)
	return nil
}

// cloudInitKey names another drive that already holds a cloud-init volume.
func (s *Server) cloudInitKey(conf map[string]string, key string, more map[string]string) string {
	for _, m := range []map[string]string{conf, more} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k == key || !isDriveKey(k) {
				continue
			}
			if strings.Contains(m[k], "-cloudinit") || strings.HasSuffix(strings.SplitN(m[k], ",", 2)[0], ":cloudinit") {
				return k
			}
		}
	}
	return ""
}

// volumeLocked resolves "storage:volname" on a node; a missing volume is
// "volume ... does not exist".
func (s *Server) volumeLocked(nodeName, volid string) (*volume, error) {
	sid, name, ok := strings.Cut(volid, ":")
	if !ok {
		return nil, fmt.Errorf("unable to parse volume ID '%s'\n", volid)
	}
	st, err := s.storageLocked(nodeName, sid)
	if err != nil {
		return nil, err
	}
	v, ok := st.volumes[name]
	if !ok {
		return nil, fmt.Errorf("volume %s does not exist\n", volid)
	}
	return v, nil
}

// freeDiskNameLocked is find_free_diskname: the lowest free
// vm-<vmid>-disk-<n> (base-... for templates), in <vmid>/ with an extension
// on directory storages.
func (s *Server) freeDiskNameLocked(st *storage, vmid int, format string, template bool) string {
	prefix := "vm"
	if template {
		prefix = "base"
	}
	for n := 0; ; n++ {
		name := fmt.Sprintf("%s-%d-disk-%d", prefix, vmid, n)
		if st.spec.Type == "dir" {
			name = fmt.Sprintf("%d/%s.%s", vmid, name, format)
		}
		if !s.diskNameTakenLocked(st, vmid, n) && st.volumes[name] == nil {
			return name
		}
	}
}

// diskNameTakenLocked: disk-<n> is used by vm- or base- of the VM.
func (s *Server) diskNameTakenLocked(st *storage, vmid, n int) bool {
	suffix := fmt.Sprintf("-%d-disk-%d", vmid, n)
	for name := range st.volumes {
		base := name
		if i := strings.LastIndex(base, "/"); i >= 0 {
			base = base[i+1:]
		}
		base = strings.TrimSuffix(strings.TrimSuffix(base, ".qcow2"), ".raw")
		if strings.HasSuffix(base, suffix) && (strings.HasPrefix(base, "vm-") || strings.HasPrefix(base, "base-")) {
			return true
		}
	}
	return false
}

// allocVolumeLocked is vdisk_alloc. Directory storages refuse what does not
// fit (qcow2 metadata preallocation aside, the lab counts the full size);
// lvm-thin over-provisions like LVM does, with its warning.
func (s *Server) allocVolumeLocked(st *storage, vmid int, name, format string, size int64) (*volume, error) {
	if _, exists := st.volumes[name]; exists {
		return nil, fmt.Errorf("unable to create volume '%s:%s' - already exists\n", st.spec.ID, name)
	}
	if st.spec.Type == "dir" && st.used()+size > st.total() {
		return nil, fmt.Errorf("unable to create image: qemu-img: %s: Could not resize file: No space left on device\n", name)
	}
	v := &volume{storage: st.spec.ID, name: name, content: "images", format: format, size: size, owner: vmid, ctime: time.Now().Unix()}
	st.volumes[name] = v
	return v, nil
}

// thinOvercommit reports, like lvcreate's warning, when the sum of thin
// volume sizes exceeds the pool.
func thinOvercommit(st *storage) string {
	if st.spec.Type != "lvmthin" {
		return ""
	}
	var sum int64
	for _, v := range st.volumes {
		sum += v.size
	}
	if sum <= st.total() {
		return ""
	}
	return fmt.Sprintf("  WARNING: Sum of all thin volume sizes (%s) exceeds the size of thin pool pve/data (%s).", humanSize(sum), humanSize(st.total()))
}

func humanSize(b int64) string {
	return fmt.Sprintf("%.2f GiB", float64(b)/float64(1<<30))
}

// vmVolumesLocked lists the volumes a VM owns on its node, sorted.
func (s *Server) vmVolumesLocked(v *vm) []*volume {
	n := s.node(v.node)
	var out []*volume
	for _, st := range n.storages {
		for _, vol := range st.volumes {
			if vol.owner == v.vmid {
				out = append(out, vol)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].volid() < out[j].volid() })
	return out
}

// referencedVolumes maps the volids a config references (drives, unused,
// and pending drives) to their keys.
func (s *Server) referencedVolumes(v *vm) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{v.conf, v.pending} {
		for k, val := range m {
			prefix, _, ok := keyIndex(k)
			if !ok || (!isDriveKey(k) && prefix != "unused") {
				continue
			}
			file := strings.SplitN(val, ",", 2)[0]
			file = strings.TrimPrefix(file, "file=")
			out[file] = k
		}
	}
	return out
}
