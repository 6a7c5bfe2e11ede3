package pve

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pveapi"
)

// hQemuList is GET /nodes/{node}/qemu: the VMs the caller holds VM.Audit on.
func (s *Server) hQemuList(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, id := range s.vmIDsLocked() {
		v := s.vms[id]
		if v.node != r.p["node"] || !s.hasLocked(r.user, fmt.Sprintf("/vms/%d", id), "VM.Audit") {
			continue
		}
		st := s.vmStatusLocked(v)
		delete(st, "ha")
		delete(st, "qmpstatus")
		out = append(out, st)
	}
	return out, nil
}

// hQemuIndex is GET /nodes/{node}/qemu/{vmid} (the directory index).
func (s *Server) hQemuIndex(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.vmLocked(r.p["node"], r.vmid()); err != nil {
		return nil, err
	}
	var out []map[string]string
	for _, sub := range []string{"config", "pending", "status", "unlink", "vncproxy", "termproxy", "migrate", "resize", "move", "rrd", "rrddata", "monitor", "agent", "snapshot", "spiceproxy", "sendkey", "firewall", "mtunnel", "remote_migrate", "cloudinit"} {
		out = append(out, map[string]string{"subdir": sub})
	}
	return out, nil
}

// configKeys are the parameters of create/config that are not written to
// the config.
var notConfigKeys = map[string]bool{
	"node": true, "vmid": true, "archive": true, "bwlimit": true, "force": true, "pool": true,
	"start": true, "ha-managed": true, "storage": true, "unique": true, "live-restore": true,
	"import-working-storage": true, "digest": true, "delete": true, "revert": true, "skiplock": true,
	"background_delay": true, "skip_cloud_init": true,
}

// checkCreatePermsLocked is create_vm's permission part: the pool must
// exist, the default storage needs Datastore.AllocateSpace, the VM
// VM.Allocate on /vms/<vmid> or on the pool, then every option, drive and
// bridge its own privilege.
func (s *Server) checkCreatePermsLocked(r *request, vmid int, params map[string]string) error {
	pool, hasPool := r.p["pool"]
	if hasPool {
		if err := s.poolMustExistLocked(pool); err != nil {
			return err
		}
	}
	if st, ok := r.p["storage"]; ok {
		if err := s.checkLocked(r.user, "/storage/"+st, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if !s.hasLocked(r.user, fmt.Sprintf("/vms/%d", vmid), "VM.Allocate") &&
		!(pool != "" && s.hasLocked(r.user, "/pool/"+pool, "VM.Allocate")) && r.user != "root@pam" {
		return permError("")
	}
	if err := s.checkStorageAccessLocked(r.user, vmid, params, r.p["storage"]); err != nil {
		return err
	}
	if err := s.checkModifyConfigLocked(r.user, vmid, pool, slices.Sorted(maps.Keys(params))); err != nil {
		return err
	}
	if err := checkSerialPerm(r.user, params); err != nil {
		return fail("%s", err.Error())
	}
	if err := s.checkSerialSocketLocked(r.user, vmid, pool, params); err != nil {
		return err
	}
	return s.checkBridgeAccessLocked(r.user, params)
}

// hQemuCreate is create_vm (qemu-server src/PVE/API2/Qemu.pm): synchronous
// checks, create_and_lock_config (a config with "lock: create"), then a
// qmcreate worker that allocates disks and writes the config; a failed
// worker removes the config again.
func (s *Server) hQemuCreate(r *request) (any, error) {
	vmid := r.vmid()
	nodeName := r.p["node"]
	if _, ok := r.p["archive"]; ok {
		return nil, &apiError{code: 501, msg: "lab: restoring from a backup archive is not implemented\n"}
	}
	emsg := fmt.Sprintf("unable to create VM %d -", vmid)
	params := map[string]string{}
	for k, v := range r.p {
		if !notConfigKeys[k] {
			params[k] = v
		}
	}
	s.mu.Lock()
	if err := s.checkCreatePermsLocked(r, vmid, params); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if err := s.checkDriveParamsLocked(nodeName, params, r.p["storage"]); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if err := s.addRandomMACsLocked(params); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Unlock()

	unlock, err := s.lockVM(vmid, 5*time.Second)
	if err != nil {
		return nil, fail("%s %s", emsg, errorText(err))
	}
	s.mu.Lock()
	if other, ok := s.vms[vmid]; ok {
		s.mu.Unlock()
		unlock()
		return nil, fail("%s VM %d already exists on node '%s'\n", emsg, vmid, other.node)
	}
	if ct, ok := s.cts[vmid]; ok {
		s.mu.Unlock()
		unlock()
		return nil, fail("%s CT %d already exists on node '%s'\n", emsg, vmid, ct.node)
	}
	v := &vm{vmid: vmid, node: nodeName, conf: map[string]string{"lock": "create"}, pending: map[string]string{}, delete: map[string]bool{}}
	s.vms[vmid] = v
	s.mu.Unlock()
	unlock()

	pool, start, defStorage := r.p["pool"], r.p["start"] == "1", r.p["storage"]
	s.mu.Lock()
	defer s.mu.Unlock()
	// a failed worker removes the config file again; one that died with its
	// node (power loss) leaves it, "lock: create" and all
	removeConf := func() {
		s.mu.Lock()
		if s.vms[vmid] == v {
			delete(s.vms, vmid)
		}
		s.mu.Unlock()
	}
	return s.startTaskUndo(nodeName, "qmcreate", strconv.Itoa(vmid), r.user, func(ctx context.Context, l *taskLog) error {
		err := s.createVM(ctx, l, v, params, pool, defStorage, emsg)
		if err != nil {
			if !powerLost(ctx) {
				removeConf()
			}
			return err
		}
		if start {
			l.Logf("Execute autostart")
			if err := s.startVM(ctx, l, v, false); err != nil {
				l.Warnf("%s", errorText(err))
			}
		}
		return nil
	}, removeConf), nil
}

func (s *Server) createVM(ctx context.Context, l *taskLog, v *vm, params map[string]string, pool, defStorage, emsg string) error {
	unlock, err := s.lockVM(v.vmid, time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.sleep(ctx, createDuration); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	created, vols, err := s.createDisksLocked(v.node, v.vmid, map[string]string{}, params, defStorage, params["template"] == "1", l)
	if err != nil {
		s.freeVolumesLocked(vols)
		return fmt.Errorf("%s %s", emsg, errorText(err))
	}
	conf := map[string]string{}
	for k, val := range params {
		conf[k] = val
	}
	for k, val := range created {
		conf[k] = val
	}
	conf["meta"] = fmt.Sprintf("creation-qemu=10.1.2,ctime=%d", time.Now().Unix())
	if _, ok := conf["boot"]; !ok {
		if b := s.defaultBootOrder(conf); b != "" {
			conf["boot"] = b
		}
	}
	if _, ok := conf["smbios1"]; !ok {
		conf["smbios1"] = "uuid=" + newUUID(s.rng)
	}
	if g, ok := conf["vmgenid"]; !ok || g == "1" {
		conf["vmgenid"] = newUUID(s.rng)
	}
	if t, ok := conf["tags"]; ok {
		conf["tags"] = uniqueTags(t)
	}
	for _, vol := range vols {
		if w := thinOvercommit(s.storageOf(v.node, vol.storage)); w != "" {
			l.Logf("%s", w)
			break
		}
	}
	v.conf = conf
	if pool != "" {
		if p, ok := s.pools[pool]; ok {
			p.vms[v.vmid] = true
		}
	}
	return nil
}

func (s *Server) storageOf(nodeName, id string) *storage {
	return s.node(nodeName).storage(id)
}

func (s *Server) freeVolumesLocked(vols []*volume) {
	for _, vol := range vols {
		for _, n := range s.nodes {
			if st := n.storage(vol.storage); st != nil && st.volumes[vol.name] == vol {
				delete(st.volumes, vol.name)
			}
		}
	}
}

// hQemuClone is clone_vm: the source keeps a shared lock (exclusive while
// running), the new VM exists with "lock: clone" while disks are copied
// (full) or cloned from a template's base volumes (linked).
func (s *Server) hQemuClone(r *request) (any, error) {
	c := cloneRequest{r: r, vmid: r.vmid(), node: r.p["node"], target: r.p["target"], storage: r.p["storage"]}
	c.newid, _ = strconv.Atoi(r.p["newid"])
	if c.target == c.node {
		c.target = ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, _, err := s.checkCloneLocked(c); err != nil {
		return nil, err
	}
	return s.startTask(c.node, "qmclone", strconv.Itoa(c.vmid), r.user, func(ctx context.Context, l *taskLog) error {
		return s.runClone(ctx, l, c)
	}), nil
}

// cloneRequest is a clone call's parameters.
type cloneRequest struct {
	r                     *request
	vmid, newid           int
	node, target, storage string
}

// checkCloneLocked is clone_vm's checks, made before the task starts and
// again in it: it returns the source and whether the clone is full.
func (s *Server) checkCloneLocked(c cloneRequest) (*vm, bool, error) {
	r := c.r
	if p, ok := r.p["pool"]; ok {
		if err := s.poolMustExistLocked(p); err != nil {
			return nil, false, err
		}
	}
	if c.target != "" && s.node(c.target) == nil {
		return nil, false, fail("no such cluster node '%s'\n", c.target)
	}
	if c.storage != "" {
		st, err := s.storageLocked(c.node, c.storage)
		if err != nil {
			return nil, false, err
		}
		if !st.hasContent("images") {
			return nil, false, param1("storage", fmt.Sprintf("storage '%s' does not support vm images", c.storage))
		}
		if c.target != "" {
			return nil, false, fail("can't clone to non-shared storage '%s'\n", c.storage)
		}
	}
	src, err := s.vmLocked(c.node, c.vmid)
	if err != nil {
		return nil, false, err
	}
	if err := checkLock(src); err != nil {
		return nil, false, err
	}
	full := !src.isTemplate()
	if f, ok := r.p["full"]; ok {
		full = f == "1"
	}
	if err := s.checkLinkedCloneLocked(r, src, full, c.storage); err != nil {
		return nil, false, err
	}
	if err := s.checkCloneStorageAccessLocked(r.user, src.conf, c.storage); err != nil {
		return nil, false, err
	}
	if err := s.checkBridgeAccessLocked(r.user, src.conf); err != nil {
		return nil, false, err
	}
	if c.target != "" {
		return nil, false, fail("can't clone VM to node '%s' (VM uses local storage)\n", c.target)
	}
	if other, ok := s.vms[c.newid]; ok && other.node == c.node {
		return nil, false, fail("unable to create VM %d: config file already exists\n", c.newid)
	}
	return src, full, nil
}

// checkLinkedCloneLocked refuses what a linked clone cannot take: a storage
// or format parameter, or a source that is not a template and has disks.
func (s *Server) checkLinkedCloneLocked(r *request, src *vm, full bool, storageID string) error {
	if full {
		return nil
	}
	if storageID != "" {
		return fail("parameter 'storage' not allowed for linked clones\n")
	}
	if _, ok := r.p["format"]; ok {
		return fail("parameter 'format' not allowed for linked clones\n")
	}
	for _, k := range slices.Sorted(maps.Keys(src.conf)) {
		if !isDriveKey(k) {
			continue
		}
		d, _ := s.parseDrive(k, src.conf[k])
		if d["media"] == "cdrom" && !strings.Contains(d["file"], "cloudinit") {
			continue
		}
		if !strings.Contains(d["file"], "cloudinit") && !src.isTemplate() {
			return fail("Linked clone feature is not supported for '%s' (%s)\n", d["file"], k)
		}
	}
	return nil
}

// runClone is the qmclone task: lock source and target, check again, make
// the new VM with "lock: clone", copy for a while, then write its config.
func (s *Server) runClone(ctx context.Context, l *taskLog, c cloneRequest) error {
	vmid, newid := c.vmid, c.newid
	// Exclusive lock if the source runs, else shared (clone_vm).
	s.mu.Lock()
	running := s.vms[vmid] != nil && s.vms[vmid].running
	s.mu.Unlock()
	lock := s.lockVMShared
	if running {
		lock = s.lockVM
	}
	unlockSrc, err := lock(vmid, time.Second)
	if err != nil {
		return err
	}
	defer unlockSrc()
	unlockDst, err := s.lockVM(newid, time.Second)
	if err != nil {
		return err
	}
	defer unlockDst()
	nv, src, srcConf, full, size, err := s.startCloneLocked(l, c)
	if err != nil {
		return err
	}

	wait := time.Second
	if full {
		wait += time.Duration(size/(200<<20)) * time.Second // ~200 MiB/s copy
	}
	s.waitCloneHold(ctx, newid)
	if err := s.sleep(ctx, wait); err != nil {
		if powerLost(ctx) {
			return err // the temporary "lock: clone" config stays
		}
		s.mu.Lock()
		if s.vms[newid] == nv {
			delete(s.vms, newid)
		}
		s.mu.Unlock()
		// clone_vm's signal handler dies with this text
		return fmt.Errorf("clone failed: interrupted by signal\n")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	newConf, vols, err := s.cloneConfigLocked(l, src, srcConf, nv, full, c.storage, c.r.p)
	if err != nil {
		s.freeVolumesLocked(vols)
		if s.vms[newid] == nv {
			delete(s.vms, newid)
		}
		return fmt.Errorf("clone failed: %s", errorText(err))
	}
	nv.conf = newConf
	if p, ok := c.r.p["pool"]; ok {
		if pl, ok := s.pools[p]; ok {
			pl.vms[newid] = true
		}
	}
	return nil
}

// startCloneLocked checks the clone again under the locks and makes the new
// VM with "lock: clone"; it returns it, the source and a copy of its config,
// whether the clone is full, and the size of the source's volumes.
func (s *Server) startCloneLocked(l *taskLog, c cloneRequest) (nv, src *vm, srcConf map[string]string, full bool, size int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vmid, newid := c.vmid, c.newid
	if src, full, err = s.checkCloneLocked(c); err != nil {
		return nil, nil, nil, false, 0, err
	}
	if other, ok := s.vms[newid]; ok {
		return nil, nil, nil, false, 0, fmt.Errorf("clone failed: unable to create VM %d: VM %d already exists on node '%s'\n", newid, newid, other.node)
	}
	if ct, ok := s.cts[newid]; ok {
		return nil, nil, nil, false, 0, fmt.Errorf("clone failed: unable to create VM %d: CT %d already exists on node '%s'\n", newid, newid, ct.node)
	}
	l.Logf("create %s clone of drive(s)", map[bool]string{true: "full", false: "linked"}[full])
	l.Logf("creating a clone of VM %d with ID %d", vmid, newid)
	nv = &vm{vmid: newid, node: c.node, conf: map[string]string{"lock": "clone"}, pending: map[string]string{}, delete: map[string]bool{}}
	s.vms[newid] = nv
	srcConf = maps.Clone(src.conf)
	for _, vol := range s.vmVolumesLocked(src) {
		size += vol.size
	}
	return nv, src, srcConf, full, size, nil
}

// cloneConfigLocked copies the source config for the clone: new MACs, a new
// SMBIOS uuid and vmgenid, copies (full) or linked clones of the disks, the
// CD-ROMs as they are, no unused disks, no template flag.
func (s *Server) cloneConfigLocked(l *taskLog, src *vm, srcConf map[string]string, nv *vm, full bool, storageID string, p map[string]string) (map[string]string, []*volume, error) {
	newConf := map[string]string{}
	var vols []*volume
	for _, k := range slices.Sorted(maps.Keys(srcConf)) {
		val := srcConf[k]
		prefix, _, indexed := keyIndex(k)
		switch {
		case k == "lock" || k == "template" || (indexed && prefix == "unused"):
			continue
		case indexed && prefix == "net":
			n, err := s.confM.ParseProperty(k, val)
			if err != nil {
				return nil, vols, err
			}
			n["macaddr"] = s.randomMACLocked()
			newConf[k] = pveapi.PrintPropertyString(s.confM.Param(k).Props, n)
		case isDriveKey(k):
			d, err := s.parseDrive(k, val)
			if err != nil {
				return nil, vols, fmt.Errorf("unable to parse drive options for '%s'\n", k)
			}
			isCI := strings.Contains(d["file"], "cloudinit")
			if d["media"] == "cdrom" && !isCI {
				newConf[k] = val
				continue
			}
			srcVol, err := s.volumeLocked(src.node, d["file"])
			if err != nil {
				return nil, vols, err
			}
			st := s.storageOf(src.node, srcVol.storage)
			if full && storageID != "" {
				st = s.storageOf(src.node, storageID)
			}
			var nvol *volume
			switch {
			case isCI:
				name := fmt.Sprintf("vm-%d-cloudinit", nv.vmid)
				if st.spec.Type == "dir" {
					name = fmt.Sprintf("%d/%s.qcow2", nv.vmid, name)
				}
				nvol, err = s.allocVolumeLocked(st, nv.vmid, name, srcVol.format, cloudInitSize)
			case full:
				format := srcVol.format
				if st.spec.Type == "lvmthin" {
					format = "raw"
				} else if f := p["format"]; f != "" {
					format = f
				}
				nvol, err = s.allocVolumeLocked(st, nv.vmid, s.freeDiskNameLocked(st, nv.vmid, format, false), format, srcVol.size)
				if nvol != nil {
					nvol.image, nvol.written = srcVol.image, srcVol.written
				}
			default:
				name := s.freeDiskNameLocked(st, nv.vmid, srcVol.format, false)
				if st.spec.Type == "lvmthin" {
					name = srcVol.name + "/" + name
				}
				nvol, err = s.allocVolumeLocked(st, nv.vmid, name, srcVol.format, srcVol.size)
				if nvol != nil {
					nvol.image, nvol.parent = srcVol.image, srcVol.name
				}
			}
			if err != nil {
				return nil, vols, err
			}
			vols = append(vols, nvol)
			d["file"] = nvol.volid()
			newConf[k] = s.printDrive(k, d)
			l.Logf("%s: %s clone of '%s' to '%s'", k, map[bool]string{true: "full", false: "linked"}[full], srcVol.volid(), nvol.volid())
		default:
			newConf[k] = val
		}
	}
	sm, _ := pveapi.ParseNamed("pve-qm-smbios1", newConf["smbios1"])
	if sm == nil {
		sm = map[string]string{}
	}
	sm["uuid"] = newUUID(s.rng)
	newConf["smbios1"] = pveapi.PrintPropertyString(pveapi.NamedFormat("pve-qm-smbios1"), sm)
	if _, ok := newConf["vmgenid"]; ok {
		newConf["vmgenid"] = newUUID(s.rng)
	}
	if name := p["name"]; name != "" {
		newConf["name"] = name
	} else if n := srcConf["name"]; n != "" {
		newConf["name"] = "Copy-of-VM-" + n
	} else {
		newConf["name"] = fmt.Sprintf("Copy-of-VM-%d", src.vmid)
	}
	if d := p["description"]; d != "" {
		newConf["description"] = d
	}
	return newConf, vols, nil
}
