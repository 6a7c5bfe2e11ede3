package pve

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pveapi"
)

func (s *Server) vmIDsLocked() []int {
	ids := make([]int, 0, len(s.vms))
	for id := range s.vms {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// configMissing is PVE::AbstractConfig::load_config's error.
func configMissing(nodeName string, vmid int) error {
	return fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist\n", nodeName, vmid)
}

// vmLocked loads a VM's config from the node named in the request: a VM on
// another node does not exist there.
func (s *Server) vmLocked(nodeName string, vmid int) (*vm, error) {
	v, ok := s.vms[vmid]
	if !ok || v.node != nodeName {
		return nil, configMissing(nodeName, vmid)
	}
	return v, nil
}

func (r *request) vmid() int {
	id, _ := strconv.Atoi(r.p["vmid"])
	return id
}

// checkLock is check_lock: a config lock ("create", "clone", ...) blocks
// most operations.
func checkLock(v *vm) error {
	if l := v.conf["lock"]; l != "" {
		return fail("VM is locked (%s)\n", l)
	}
	return nil
}

// memoryMiB reads the memory property string ("[current=]<MiB>", default 512).
func (s *Server) memoryMiB(conf map[string]string) int64 {
	val, ok := conf["memory"]
	if !ok {
		return 512
	}
	m, err := s.confM.ParseProperty("memory", val)
	if err != nil {
		return 512
	}
	n, _ := strconv.ParseInt(m["current"], 10, 64)
	return n
}

func intOr(conf map[string]string, key string, def int) int {
	if v, ok := conf[key]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// vmStatusLocked is status/current (and the /qemu list entries).
func (s *Server) vmStatusLocked(v *vm) map[string]any {
	conf := v.conf
	cpus := intOr(conf, "cores", 1) * intOr(conf, "sockets", 1)
	if n := s.node(v.node); n != nil && cpus > n.spec.Cores {
		cpus = n.spec.Cores // no more than the host has
	}
	if vc := intOr(conf, "vcpus", 0); vc > 0 {
		cpus = vc
	}
	st := map[string]any{
		"vmid": v.vmid, "name": conf["name"], "cpus": cpus, "maxmem": s.memoryMiB(conf) << 20,
		"maxdisk": s.bootDiskSizeLocked(v), "disk": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
		"ha": map[string]any{"managed": 0},
	}
	if conf["name"] == "" {
		st["name"] = fmt.Sprintf("VM %d", v.vmid)
	}
	if t := conf["tags"]; t != "" {
		st["tags"] = t
	}
	if l := conf["lock"]; l != "" {
		st["lock"] = l
	}
	if v.isTemplate() {
		st["template"] = 1
	}
	if s.agentEnabled(conf) {
		st["agent"] = 1
	}
	// PVE 9's vmstatus (qemu-server QemuServer.pm, 9.1.3): host memory,
	// pressure stall figures, serial, balloon_min and shares
	if b := intOr(conf, "balloon", 0); b > 0 {
		st["balloon_min"] = int64(b) << 20
		st["shares"] = intOr(conf, "shares", 1000)
	}
	for k := range conf {
		if p, _, ok := keyIndex(k); ok && p == "serial" {
			st["serial"] = 1
		}
	}
	st["memhost"] = 0
	if v.running {
		st["status"] = "running"
		st["qmpstatus"] = "running"
		if v.paused {
			st["qmpstatus"] = "paused"
		}
		st["uptime"] = int64(time.Since(v.startedAt).Seconds())
		st["pid"] = 10000 + v.vmid%50000
		st["mem"] = (v.memoryMiB << 20) / 2
		st["memhost"] = st["mem"]
		st["cpu"] = 0.02
		for _, k := range []string{"pressurecpusome", "pressurecpufull", "pressureiosome", "pressureiofull", "pressurememorysome", "pressurememoryfull"} {
			st[k] = 0
		}
		// QEMU 10.1 (pve-qemu-kvm of PVE 9.1): machine type and version
		// as query-machines and query-version report them
		st["running-machine"] = "pc-i440fx-10.1+pve0"
		if strings.HasPrefix(v.runConf["machine"], "q35") {
			st["running-machine"] = "pc-q35-10.1+pve0"
		}
		st["running-qemu"] = "10.1.2"
	} else {
		st["status"] = "stopped"
		st["qmpstatus"] = "stopped"
		st["uptime"] = 0
		st["mem"] = 0
		st["cpu"] = 0
	}
	return st
}

func (s *Server) agentEnabled(conf map[string]string) bool {
	a, ok := conf["agent"]
	if !ok {
		return false
	}
	m, err := s.confM.ParseProperty("agent", a)
	return err == nil && m["enabled"] == "1"
}

// bootDiskSizeLocked is maxdisk: the size of the boot disk.
func (s *Server) bootDiskSizeLocked(v *vm) int64 {
	for _, dev := range s.bootOrder(v.conf) {
		if !isDriveKey(dev) {
			continue
		}
		if d, err := s.parseDrive(dev, v.conf[dev]); err == nil && d["media"] != "cdrom" {
			n, _ := pveapi.ParseSize(d["size"])
			return n
		}
	}
	return 0
}

// parseDrive parses a drive property string with its schema.
func (s *Server) parseDrive(key, value string) (map[string]string, error) {
	return s.confM.ParseProperty(key, value)
}

// printDrive is print_drive: file first, then the other keys sorted.
func (s *Server) printDrive(key string, d map[string]string) string {
	return pveapi.PrintPropertyString(s.confM.Param(key).Props, d)
}

// bootOrder resolves the effective boot order of a config (device_bootorder
// and get_default_bootdevices in qemu-server QemuServer.pm).
func (s *Server) bootOrder(conf map[string]string) []string {
	if b, ok := conf["boot"]; ok {
		if m, err := pveapi.ParseNamed("pve-qm-boot", b); err == nil {
			if m["order"] != "" {
				return splitList(m["order"])
			}
			if m["legacy"] != "" {
				return s.legacyBootOrder(conf, m["legacy"])
			}
		}
	}
	return s.legacyBootOrder(conf, "cdn")
}

// legacyBootOrder maps "cdn" (disk, cdrom, network) to devices.
func (s *Server) legacyBootOrder(conf map[string]string, legacy string) []string {
	var out []string
	for _, c := range legacy {
		switch c {
		case 'c':
			if d := s.firstDisk(conf, false); d != "" {
				out = append(out, d)
			}
		case 'd':
			if d := s.firstDisk(conf, true); d != "" {
				out = append(out, d)
			}
		case 'n':
			for i := 0; i < 32; i++ {
				if _, ok := conf["net"+itoa(i)]; ok {
					out = append(out, "net"+itoa(i))
					break
				}
			}
		}
	}
	return out
}

// driveOrder is valid_drive_names_for_boot: ide, scsi, virtio, sata.
func driveOrder() []string {
	var out []string
	for i := 0; i < 4; i++ {
		out = append(out, "ide"+itoa(i))
	}
	for i := 0; i < 31; i++ {
		out = append(out, "scsi"+itoa(i))
	}
	for i := 0; i < 16; i++ {
		out = append(out, "virtio"+itoa(i))
	}
	for i := 0; i < 6; i++ {
		out = append(out, "sata"+itoa(i))
	}
	return out
}

// firstDisk is resolve_first_disk.
func (s *Server) firstDisk(conf map[string]string, cdrom bool) string {
	for _, k := range driveOrder() {
		val, ok := conf[k]
		if !ok {
			continue
		}
		d, err := s.parseDrive(k, val)
		if err != nil {
			continue
		}
		if (d["media"] == "cdrom") == cdrom {
			return k
		}
	}
	return ""
}

// defaultBootOrder is get_default_bootdevices printed as "order=...".
func (s *Server) defaultBootOrder(conf map[string]string) string {
	var devs []string
	if d := s.firstDisk(conf, false); d != "" {
		devs = append(devs, d)
	}
	if d := s.firstDisk(conf, true); d != "" {
		devs = append(devs, d)
	}
	for i := 0; i < 32; i++ {
		if _, ok := conf["net"+itoa(i)]; ok {
			devs = append(devs, "net"+itoa(i))
			break
		}
	}
	if len(devs) == 0 {
		return ""
	}
	return "order=" + strings.Join(devs, ";")
}

// randomMAC is PVE::Tools::random_ether_addr with the datacenter prefix:
// random bytes with the multicast bit cleared and the locally administered
// bit set, then the prefix replacing the leading characters.
func (s *Server) randomMACLocked() string {
	var b [6]byte
	s.rng.Read(b[:])
	b[0] = b[0]&0xfe | 2
	addr := fmt.Sprintf("%02X:%02X:%02X:%02X:%02X:%02X", b[0], b[1], b[2], b[3], b[4], b[5])
	p := strings.ToUpper(s.opts.MACPrefix)
	return p + addr[len(p):]
}

// addRandomMACs is add_random_macs: every netN without a MAC gets one.
func (s *Server) addRandomMACsLocked(params map[string]string) error {
	for k, val := range params {
		if p, _, ok := keyIndex(k); !ok || p != "net" {
			continue
		}
		n, err := s.confM.ParseProperty(k, val)
		if err != nil {
			return param1(k, "invalid format - "+err.Error())
		}
		if n["macaddr"] == "" {
			n["macaddr"] = s.randomMACLocked()
		}
		params[k] = pveapi.PrintPropertyString(s.confM.Param(k).Props, n)
	}
	return nil
}

// uniqueTags is PVE::GuestHelpers::get_unique_tags with the default tag
// style: lower-cased, sorted, deduplicated, joined with ';'.
func uniqueTags(tags string) string {
	seen := map[string]bool{}
	var out []string
	for _, t := range splitList(tags) {
		t = strings.ToLower(t)
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ";")
}
