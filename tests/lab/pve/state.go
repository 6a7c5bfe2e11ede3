package pve

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// hostReservedMiB is memory the host itself uses (PVE, ZFS ARC, ...), not
// available to guests.
const hostReservedMiB = 2048

type node struct {
	spec     NodeSpec
	online   bool
	bootTime time.Time
	storages []*storage
	// powerOn, while the node is down, ends its downtime early when
	// closed (PowerOnNode).
	powerOn chan struct{}
	// hung, while the node's API accepts connections and never answers
	// (HangNode), is closed when it answers again; hangFor is how long
	// pveproxy's proxy waits for it.
	hung    chan struct{}
	hangFor time.Duration
	waiting int // requests waiting for it now
}

func (n *node) storage(id string) *storage {
	for _, s := range n.storages {
		if s.spec.ID == id {
			return s
		}
	}
	return nil
}

func (n *node) hasBridge(name string) bool {
	for _, b := range n.spec.Bridges {
		if b == name {
			return true
		}
	}
	return false
}

type storage struct {
	spec    StorageSpec
	node    string
	volumes map[string]*volume // by volname ("vm-100-disk-0", "iso/x.iso")
}

func (s *storage) hasContent(c string) bool {
	for _, x := range s.spec.Content {
		if x == c {
			return true
		}
	}
	return false
}

func (s *storage) total() int64 { return s.spec.SizeGiB << 30 }

// used counts allocated bytes. lvm-thin volumes count what was written to
// them (thin provisioning), files their size.
func (s *storage) used() int64 {
	var u int64
	for _, v := range s.volumes {
		if s.spec.Type == "lvmthin" {
			u += v.written
		} else {
			u += v.fileBytes()
		}
	}
	return u
}

type volume struct {
	storage string
	name    string // volname: vm-100-disk-0, 100/vm-100-disk-0.qcow2, iso/talos.iso
	content string // images, rootdir, iso, import, vztmpl, snippets
	format  string // raw, qcow2, iso
	size    int64  // the volume's (virtual) size, what volume_size_info reports
	// fileSize is what the file itself takes when that differs from size: a
	// qcow2 or vmdk image is smaller than the disk it holds. 0: size.
	fileSize int64
	written  int64 // bytes a guest or an import wrote (thin usage)
	owner    int   // vmid owning the volume, 0 for none
	image    Image
	ctime    int64
	parent   string // linked clone: the base volume's volname
}

func (v *volume) volid() string { return v.storage + ":" + v.name }

// fileBytes is the size of the volume's file.
func (v *volume) fileBytes() int64 {
	if v.fileSize > 0 {
		return v.fileSize
	}
	return v.size
}

type vm struct {
	vmid    int
	node    string
	conf    map[string]string // current config, as written to <vmid>.conf
	pending map[string]string // [PENDING] section
	delete  map[string]bool   // pending deletions (true: force)

	running    bool
	paused     bool // qemu runs with its vCPUs stopped (status/suspend)
	gen        int  // boot generation: each start or reset boots a new guest
	startedAt  time.Time
	runConf    map[string]string // config the running qemu was started with
	guest      Guest
	stopGuest  context.CancelFunc
	memoryMiB  int64 // accounted on the node while running
	cloudinit  *CloudInit
	ciSnapshot map[string]string // cloud-init related keys when the drive was generated
}

func (v *vm) isTemplate() bool { return v.conf["template"] == "1" }

// addUnused is add_unused_volume (pve-guest-common AbstractConfig.pm): volid
// goes in the first free unusedN, whose key it returns ("" when all 256 are
// taken).
func (v *vm) addUnused(volid string) string {
	for i := 0; i < 256; i++ {
		k := "unused" + itoa(i)
		if _, used := v.conf[k]; !used {
			v.conf[k] = volid
			return k
		}
	}
	return ""
}

// configFile renders the config like qemu-server's write_vm_config (keys
// sorted, [PENDING] section last); its SHA-1 is the digest the API reports.
func (v *vm) configFile() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(v.conf)) {
		fmt.Fprintf(&b, "%s: %s\n", k, v.conf[k])
	}
	if len(v.pending) > 0 || len(v.delete) > 0 {
		b.WriteString("\n[PENDING]\n")
		if len(v.delete) > 0 {
			fmt.Fprintf(&b, "delete: %s\n", v.pendingDeleteString())
		}
		for _, k := range slices.Sorted(maps.Keys(v.pending)) {
			fmt.Fprintf(&b, "%s: %s\n", k, v.pending[k])
		}
	}
	return b.String()
}

func (v *vm) digest() string {
	sum := sha1.Sum([]byte(v.configFile()))
	return hex.EncodeToString(sum[:])
}

// pendingDeleteString is print_pending_delete: forced keys get a "!".
func (v *vm) pendingDeleteString() string {
	keys := make([]string, 0, len(v.delete))
	for k, force := range v.delete {
		if force {
			k = "!" + k
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// effective is the config with pending values applied (GET config default).
func (v *vm) effective() map[string]string {
	out := map[string]string{}
	for k, val := range v.conf {
		if _, del := v.delete[k]; !del {
			out[k] = val
		}
	}
	for k, val := range v.pending {
		out[k] = val
	}
	return out
}

type pool struct {
	id      string
	comment string
	vms     map[int]bool
	storage map[string]bool
}
