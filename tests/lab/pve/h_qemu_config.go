package pve

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config endpoints follow qemu-server src/PVE/API2/Qemu.pm (vm_config,
// vm_pending, $update_vm_api) and QemuServer.pm (vmconfig_apply_pending,
// vmconfig_hotplug_pending).

func (s *Server) hConfigGet(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := r.p["snapshot"]; ok {
		if _, cur := r.p["current"]; cur {
			return nil, paramError(map[string]string{
				"snapshot": "cannot use 'snapshot' parameter with 'current'",
				"current":  "cannot use 'snapshot' parameter with 'current'",
			})
		}
	}
	v, err := s.vmLocked(r.p["node"], r.vmid())
	if err != nil {
		return nil, err
	}
	if snap := r.p["snapshot"]; snap != "" {
		return nil, fail("snapshot '%s' does not exist\n", snap)
	}
	conf := v.effective()
	if r.p["current"] == "1" {
		conf = copyMap(v.conf)
	}
	out := map[string]any{}
	for k, val := range conf {
		out[k] = s.configValue(k, val)
	}
	if _, ok := out["cipassword"]; ok {
		out["cipassword"] = "**********"
	}
	out["digest"] = v.digest()
	return out, nil
}

// configValue renders a config value as PVE's config parser returns it
// (qemu-server QemuServer.pm check_type): integer and boolean keys as
// numbers, everything else as the string in the file.
func (s *Server) configValue(k, v string) any {
	if p := s.confM.Param(k); p != nil && (p.Type == "integer" || p.Type == "boolean") {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return v
}

func (s *Server) hPending(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.vmLocked(r.p["node"], r.vmid())
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range v.conf {
		keys[k] = true
	}
	for k := range v.pending {
		keys[k] = true
	}
	for k := range v.delete {
		keys[k] = true
	}
	out := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		e := map[string]any{"key": k}
		if val, ok := v.conf[k]; ok {
			e["value"] = s.configValue(k, val)
		}
		if val, ok := v.pending[k]; ok {
			e["pending"] = s.configValue(k, val)
		}
		if force, ok := v.delete[k]; ok {
			e["delete"] = 1
			if force {
				e["delete"] = 2
			}
		}
		if k == "cipassword" {
			if _, ok := e["value"]; ok {
				e["value"] = "**********"
			}
			if _, ok := e["pending"]; ok {
				e["pending"] = "**********"
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *Server) hConfigPost(r *request) (any, error) { return s.updateVM(r, false) }

func (s *Server) hConfigPut(r *request) (any, error) { return s.updateVM(r, true) }

// configUpdate is a parsed update request.
type configUpdate struct {
	user     string // who asks: the checks that depend on current values run in the update
	params   map[string]string
	deletes  []string
	reverts  map[string]bool
	digest   string
	skipLock bool
	force    bool
}

// updateVM is $update_vm_api: parameter checks, early config checks, then
// the update under the config lock, synchronously (PUT) or in a qmconfig
// worker (POST).
func (s *Server) updateVM(r *request, sync bool) (any, error) {
	vmid, nodeName := r.vmid(), r.p["node"]
	u, err := s.parseUpdate(r)
	if err != nil {
		return nil, err
	}
	if err := s.preflightUpdate(r.user, nodeName, vmid, u); err != nil {
		return nil, err
	}
	if sync {
		unlock, err := s.lockVM(vmid, 10*time.Second)
		if err != nil {
			return nil, fail("%s", errorText(err))
		}
		defer unlock()
		if err := s.applyUpdate(nil, nodeName, vmid, u); err != nil {
			if ae, ok := err.(*apiError); ok {
				return nil, ae
			}
			return nil, fail("%s", errorText(err))
		}
		return nil, nil
	}
	return s.vmTask(r, "qmconfig", func(ctx context.Context, l *taskLog) error {
		unlock, err := s.lockVM(vmid, 10*time.Second)
		if err != nil {
			return err
		}
		defer unlock()
		return s.applyUpdate(l, nodeName, vmid, u)
	})
}

// parseUpdate is $update_vm_api's parameter checks: the options to set,
// revert and delete, none of them named twice.
func (s *Server) parseUpdate(r *request) (*configUpdate, error) {
	u := &configUpdate{user: r.user, params: map[string]string{}, reverts: map[string]bool{}, digest: r.p["digest"], skipLock: r.p["skiplock"] == "1", force: r.p["force"] == "1"}
	for k, val := range r.p {
		if !notConfigKeys[k] && k != "force" {
			u.params[k] = val
		}
	}
	if u.skipLock && r.user != "root@pam" {
		return nil, param1("skiplock", "Only root may use this option.")
	}
	if r.p["delete"] == "" && r.p["revert"] == "" && len(u.params) == 0 {
		return nil, fail("no options specified\n")
	}
	for _, opt := range splitList(r.p["revert"]) {
		if s.confM.Param(opt) == nil || notConfigKeys[opt] {
			return nil, param1("revert", fmt.Sprintf("unknown option '%s'", opt))
		}
		if _, ok := u.params[opt]; ok {
			return nil, param1("delete", fmt.Sprintf("you can't use '-%s' and -revert %s' at the same time", opt, opt))
		}
		u.reverts[opt] = true
	}
	for _, opt := range splitList(r.p["delete"]) {
		if opt == "cdrom" {
			opt = "ide2"
		}
		if _, ok := u.params[opt]; ok {
			return nil, param1("delete", fmt.Sprintf("you can't use '-%s' and -delete %s' at the same time", opt, opt))
		}
		if u.reverts[opt] {
			return nil, param1("revert", fmt.Sprintf("you can't use '-delete %s' and -revert %s' at the same time", opt, opt))
		}
		if (s.confM.Param(opt) == nil || notConfigKeys[opt]) && !strings.HasPrefix(opt, "unused") {
			return nil, param1("delete", fmt.Sprintf("unknown option '%s'", opt))
		}
		u.deletes = append(u.deletes, opt)
	}
	return u, nil
}

// preflightUpdate is $update_vm_api's checks before the update runs:
// permissions, drive parameters, new MACs and vmgenid filled in, and the
// config's own checks (digest, lock).
func (s *Server) preflightUpdate(user, nodeName string, vmid int, u *configUpdate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkUpdatePermsLocked(user, vmid, u); err != nil {
		return err
	}
	if err := s.checkDriveParamsLocked(nodeName, u.params, ""); err != nil {
		return err
	}
	for k, val := range u.params {
		if p, _, ok := keyIndex(k); ok && p == "net" {
			one := map[string]string{k: val}
			if err := s.addRandomMACsLocked(one); err != nil {
				return err
			}
			u.params[k] = one[k]
		}
		if k == "vmgenid" && val == "1" {
			u.params[k] = newUUID(s.rng)
		}
	}
	_, err := s.loadAndCheckLocked(nodeName, vmid, u)
	return err
}

// checkUpdatePermsLocked is $update_vm_api's permission part before the
// config is loaded: each deleted and set option, the storages of new
// drives, the bridges of new NICs. What depends on the current values
// (the drive being replaced, tags) is checked as the update runs.
func (s *Server) checkUpdatePermsLocked(user string, vmid int, u *configUpdate) error {
	if err := s.checkModifyConfigLocked(user, vmid, "", u.deletes); err != nil {
		return err
	}
	if err := s.checkModifyConfigLocked(user, vmid, "", slices.Sorted(maps.Keys(u.params))); err != nil {
		return err
	}
	if err := s.checkStorageAccessLocked(user, vmid, u.params, ""); err != nil {
		return err
	}
	return s.checkBridgeAccessLocked(user, u.params)
}

// checkDrivePermLocked is $check_drive_perms: a cloud-init drive needs
// VM.Config.Cloudinit and VM.Config.CDROM, a CD drive VM.Config.CDROM, a
// disk VM.Config.Disk.
func (s *Server) checkDrivePermLocked(user string, vmid int, key, value string) error {
	if user == "root@pam" {
		return nil
	}
	d, _ := s.parseDrive(key, value)
	switch {
	case strings.Contains(d["file"], "cloudinit"):
		return s.checkVMLocked(user, vmid, "", false, "VM.Config.Cloudinit", "VM.Config.CDROM")
	case d["media"] == "cdrom":
		return s.checkVMLocked(user, vmid, "", false, "VM.Config.CDROM")
	}
	return s.checkVMLocked(user, vmid, "", false, "VM.Config.Disk")
}

// checkDeletePermLocked is the per-option check $updatefn makes as it
// deletes opt (current value val).
func (s *Server) checkDeletePermLocked(user string, v *vm, opt, val string) error {
	if user == "root@pam" {
		return nil
	}
	prefix, _, indexed := keyIndex(opt)
	switch {
	case indexed && prefix == "unused":
		return s.checkVMLocked(user, v.vmid, "", false, "VM.Config.Disk")
	case isDriveKey(opt):
		return s.checkDrivePermLocked(user, v.vmid, opt, val)
	case indexed && prefix == "serial":
		if val != "socket" {
			return fail("only root can delete '%s' config for real devices\n", opt)
		}
		return s.checkVMLocked(user, v.vmid, "", false, "VM.Config.HWType")
	case opt == "tags":
		// assert_tag_permissions; with the default tag access ("free")
		// any tag is allowed then
		return s.checkVMLocked(user, v.vmid, "", false, "VM.Config.Options")
	case indexed && prefix == "net":
		if cur, ok := v.conf[opt]; ok {
			return s.checkBridgeAccessLocked(user, map[string]string{opt: cur})
		}
	}
	return nil
}

// checkSetPermLocked is the per-option check $updatefn makes as it sets opt
// to val: the drive it replaces and the new one, serial ports, tags, the
// bridge of the NIC it replaces.
func (s *Server) checkSetPermLocked(user string, v *vm, opt, val string) error {
	if user == "root@pam" {
		return nil
	}
	prefix, _, indexed := keyIndex(opt)
	switch {
	case isDriveKey(opt):
		if old, ok := v.conf[opt]; ok {
			if err := s.checkDrivePermLocked(user, v.vmid, opt, old); err != nil {
				return err
			}
		}
		return s.checkDrivePermLocked(user, v.vmid, opt, val)
	case indexed && prefix == "serial":
		if old, ok := v.conf[opt]; (!ok || old == "socket") && val == "socket" {
			return s.checkVMLocked(user, v.vmid, "", false, "VM.Config.HWType")
		}
		return fail("only root can modify '%s' config for real devices\n", opt)
	case opt == "tags", indexed && prefix == "net":
		// as for a deletion: the tag privilege, the current NIC's bridge
		return s.checkDeletePermLocked(user, v, opt, val)
	}
	return nil
}

// loadAndCheckLocked is $load_and_check_config.
func (s *Server) loadAndCheckLocked(nodeName string, vmid int, u *configUpdate) (*vm, error) {
	v, err := s.vmLocked(nodeName, vmid)
	if err != nil {
		return nil, err
	}
	if u.digest != "" && u.digest != v.digest() {
		return nil, fail("checksum mismatch (file change by other user?)\n")
	}
	if !u.skipLock {
		if err := checkLock(v); err != nil {
			return nil, err
		}
	}
	if _, ok := u.params["memory"]; ok || u.params["balloon"] != "" {
		mem := u.params["memory"]
		if mem == "" {
			mem = firstNonEmpty(v.pending["memory"], v.conf["memory"])
		}
		maxmem := s.memoryMiB(map[string]string{"memory": mem})
		if mem == "" {
			maxmem = 512
		}
		balloon := u.params["balloon"]
		if balloon == "" {
			balloon = firstNonEmpty(v.pending["balloon"], v.conf["balloon"])
		}
		b, _ := strconv.ParseInt(balloon, 10, 64) // checked against the schema's integer format already
		if b > 0 && b > maxmem {
			return nil, fail("balloon value too large (must be smaller than assigned memory)\n")
		}
	}
	return v, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// applyUpdate is $updatefn: record deletions and new values in the pending
// section, drop pending values equal to the current ones, then apply the
// pending section (stopped VM) or hot-plug what can be (running VM).
// Called with the VM's config lock held and s.mu not held.
func (s *Server) applyUpdate(l *taskLog, nodeName string, vmid int, u *configUpdate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.loadAndCheckLocked(nodeName, vmid, u)
	if err != nil {
		return err
	}
	logUpdate(l, vmid, u)
	for opt := range u.reverts {
		if _, ok := v.conf[opt]; ok {
			u.params[opt] = v.conf[opt]
		} else if _, ok := v.pending[opt]; ok {
			u.deletes = append(u.deletes, opt)
		}
	}
	b := &bootEdit{order: s.bootOrder(v.conf), explicit: strings.Contains(v.conf["boot"], "order=")}
	for _, opt := range u.deletes {
		if err := s.pendDeleteLocked(l, v, u, opt, b); err != nil {
			return err
		}
	}
	for _, opt := range slices.Sorted(maps.Keys(u.params)) {
		if err := s.pendSetLocked(l, v, u, opt, b); err != nil {
			return err
		}
	}
	cleanupPending(v)
	if len(v.pending) == 0 && len(v.delete) == 0 {
		return nil
	}
	if v.running {
		return s.hotplugPendingLocked(v, u)
	}
	s.applyPendingLocked(v)
	return nil
}

// logUpdate writes the task log's first line: the update's parameters, the
// cloud-init password hidden.
func logUpdate(l *taskLog, vmid int, u *configUpdate) {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(u.params)) {
		val := u.params[k]
		if k == "cipassword" {
			val = "<hidden>"
		}
		parts = append(parts, "-"+k, val)
	}
	if len(u.deletes) > 0 {
		parts = append(parts, "-delete", strings.Join(u.deletes, ","))
	}
	l.Logf("update VM %d: %s", vmid, strings.Join(parts, " "))
}

// bootEdit is the VM's boot order as the update changes it; explicit: the
// config has boot: order=..., which deleted and added drives update.
type bootEdit struct {
	order    []string
	explicit bool
}

func (b *bootEdit) drop(v *vm, opt string) {
	if !b.explicit || !slices.Contains(b.order, opt) {
		return
	}
	b.order = remove(b.order, opt)
	v.pending["boot"] = "order=" + strings.Join(b.order, ";")
	if len(b.order) == 0 {
		v.pending["boot"] = ""
	}
}

func (b *bootEdit) add(v *vm, opt string) {
	b.order = append(b.order, opt)
	v.pending["boot"] = "order=" + strings.Join(b.order, ";")
}

// pendDeleteLocked records the deletion of opt: an unusedN volume and tags go
// at once, everything else is a pending deletion.
func (s *Server) pendDeleteLocked(l *taskLog, v *vm, u *configUpdate, opt string, b *bootEdit) error {
	val, ok := v.conf[opt]
	if !ok {
		val, ok = v.pending[opt]
	}
	if !ok {
		l.Logf("cannot delete '%s' - not set in current configuration!", opt)
		return nil
	}
	if err := s.checkDeletePermLocked(u.user, v, opt, val); err != nil {
		return err
	}
	_, isPending := v.pending[opt]
	delete(v.pending, opt)
	b.drop(v, opt)
	prefix, _, _ := keyIndex(opt)
	switch {
	case prefix == "unused":
		if vol, err := s.volumeLocked(v.node, strings.SplitN(val, ",", 2)[0]); err == nil && vol.owner == v.vmid {
			if err := s.volumeInUseLocked(s.storageOf(v.node, vol.storage), vol); err != nil {
				return err
			}
			delete(s.storageOf(v.node, vol.storage).volumes, vol.name)
		}
		delete(v.conf, opt)
	case opt == "tags":
		delete(v.conf, opt)
	case isDriveKey(opt):
		if isPending {
			s.registerUnusedLocked(v, val)
		}
		v.delete[opt] = u.force
	default:
		v.delete[opt] = u.force
	}
	return nil
}

// pendSetLocked records opt's new value in the pending section: a drive's
// volume is created now, tags deduplicated, the cloud-init password stored
// encrypted, a boot order checked against the VM's devices.
func (s *Server) pendSetLocked(l *taskLog, v *vm, u *configUpdate, opt string, b *bootEdit) error {
	val := u.params[opt]
	if cur, ok := v.pending[opt]; ok && cur == val {
		return nil
	}
	if err := s.checkSetPermLocked(u.user, v, opt, val); err != nil {
		return err
	}
	switch {
	case isDriveKey(opt):
		if old, ok := v.pending[opt]; ok {
			s.registerUnusedLocked(v, old)
		}
		created, vols, err := s.createDisksLocked(v.node, v.vmid, v.conf, map[string]string{opt: val}, "", v.isTemplate(), l)
		if err != nil {
			s.freeVolumesLocked(vols)
			return err
		}
		v.pending[opt] = created[opt]
		if b.explicit {
			if d, err := s.parseDrive(opt, val); err == nil && d["media"] == "cdrom" && !strings.Contains(d["file"], "cloudinit") && !slices.Contains(b.order, opt) {
				b.add(v, opt)
			}
		}
	case opt == "tags":
		v.pending[opt] = uniqueTags(val)
	case opt == "cipassword":
		v.conf[opt] = cryptPassword(val)
	case opt == "boot":
		if err := s.pendBootLocked(v, u, val); err != nil {
			return err
		}
	default:
		v.pending[opt] = val
	}
	delete(v.delete, opt)
	return nil
}

// pendBootLocked records a new boot value; its order must name devices the
// VM has or gets in this update.
func (s *Server) pendBootLocked(v *vm, u *configUpdate, val string) error {
	v.pending["boot"] = val
	m, err := s.confM.ParseProperty("boot", val)
	if err != nil || m["order"] == "" {
		return nil
	}
	devs := splitList(m["order"])
	for _, dev := range devs {
		_, inConf := v.conf[dev]
		_, inPending := v.pending[dev]
		_, inParams := u.params[dev]
		if (!inConf && !inPending && !inParams) || slices.Contains(u.deletes, dev) {
			return fmt.Errorf("invalid bootorder: device '%s' does not exist'\n", dev)
		}
	}
	v.pending["boot"] = "order=" + strings.Join(devs, ";")
	if _, ok := v.conf["bootdisk"]; ok {
		v.delete["bootdisk"] = false
	}
	return nil
}

// cleanupPending is cleanup_pending: drop pending values equal to the
// current ones and deletions of keys that are not set.
func cleanupPending(v *vm) {
	for k, val := range v.pending {
		if cur, ok := v.conf[k]; ok && cur == val {
			delete(v.pending, k)
		}
	}
	for k := range v.delete {
		if _, ok := v.conf[k]; !ok {
			delete(v.delete, k)
		}
	}
}

func remove(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// cryptPassword stands in for PVE::Tools::encrypt_pw (SHA-512 crypt): the
// value stored is never the plain password.
func cryptPassword(pw string) string {
	if strings.HasPrefix(pw, "$") {
		return pw
	}
	return "$6$lab$" + checksum("sha512", []byte("lab:"+pw))[:86]
}

// registerUnusedLocked is vmconfig_register_unused_drive: a replaced disk
// the VM owns becomes an unusedN entry (CD-ROMs and cloud-init are dropped).
func (s *Server) registerUnusedLocked(v *vm, driveVal string) {
	file := strings.SplitN(driveVal, ",", 2)[0]
	vol, err := s.volumeLocked(v.node, file)
	if err != nil || vol.owner != v.vmid || vol.content != "images" {
		return
	}
	if strings.Contains(vol.name, "cloudinit") {
		delete(s.storageOf(v.node, vol.storage).volumes, vol.name)
		return
	}
	for _, val := range v.conf {
		if strings.SplitN(val, ",", 2)[0] == file {
			return
		}
	}
	v.addUnused(file)
}

// applyPendingLocked is vmconfig_apply_pending for a stopped VM.
func (s *Server) applyPendingLocked(v *vm) {
	for _, opt := range slices.Sorted(maps.Keys(v.delete)) {
		force := v.delete[opt]
		if isDriveKey(opt) {
			if old, ok := v.conf[opt]; ok {
				if force {
					file := strings.SplitN(old, ",", 2)[0]
					if vol, err := s.volumeLocked(v.node, file); err == nil && vol.owner == v.vmid {
						delete(s.storageOf(v.node, vol.storage).volumes, vol.name)
					}
				} else {
					delete(v.conf, opt)
					s.registerUnusedLocked(v, old)
				}
			}
		}
		delete(v.conf, opt)
	}
	v.delete = map[string]bool{}
	for _, opt := range slices.Sorted(maps.Keys(v.pending)) {
		val := v.pending[opt]
		if isDriveKey(opt) {
			if old, ok := v.conf[opt]; ok && strings.SplitN(old, ",", 2)[0] != strings.SplitN(val, ",", 2)[0] {
				v.conf[opt] = val
				s.registerUnusedLocked(v, old)
				continue
			}
		}
		if val == "" {
			delete(v.conf, opt)
			continue
		}
		v.conf[opt] = val
	}
	v.pending = map[string]string{}
}
