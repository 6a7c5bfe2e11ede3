package pve

import (
	"fmt"
	"strconv"
	"strings"
)

// vmHost is the Host of one boot of a VM.
type vmHost struct {
	s   *Server
	v   *vm
	gen int
}

func (h *vmHost) WriteImage(volid string, img Image) error {
	s, v := h.s, h.v
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.vms[v.vmid]; !ok || cur != v {
		return fmt.Errorf("VM %d no longer exists", v.vmid)
	}
	if _, used := s.referencedVolumes(v)[volid]; !used {
		return fmt.Errorf("volume %s is not a disk of VM %d", volid, v.vmid)
	}
	vol, err := s.volumeLocked(v.node, volid)
	if err != nil {
		return err
	}
	if vol.content != "images" {
		return fmt.Errorf("volume %s is not a disk image (content %s)", volid, vol.content)
	}
	vol.image = img
	vol.written = min(vol.size, 1<<30)
	return nil
}

func (h *vmHost) PoweredOff() {
	s, v := h.s, h.v
	s.mu.Lock()
	defer s.mu.Unlock()
	if !v.running || v.gen != h.gen {
		return
	}
	// qemu exits with the guest: no PowerOff call back into the guest.
	v.guest = nil
	_ = s.powerOffLocked(v)
	s.logf("VM %d on %s: the guest powered off", v.vmid, v.node)
}

// bootInfoLocked describes the VM to its guest OS from the running config.
func (s *Server) bootInfoLocked(v *vm) BootInfo { return s.bootInfoLockedWith(v, v.conf) }

func (s *Server) bootInfoLockedWith(v *vm, conf map[string]string) BootInfo {
	info := BootInfo{
		Node: v.node, VMID: v.vmid, Name: conf["name"], VMGenID: conf["vmgenid"],
		BootOrder: s.bootOrder(conf), AgentEnabled: s.agentEnabled(conf),
		MemoryMiB: int(s.memoryMiB(conf)), Cores: intOr(conf, "cores", 1), Sockets: intOr(conf, "sockets", 1),
		BIOS: conf["bios"], Machine: conf["machine"],
	}
	if info.BIOS == "" {
		info.BIOS = "seabios"
	}
	if sm, err := s.confM.ParseProperty("smbios1", conf["smbios1"]); err == nil {
		info.SMBIOSUUID = sm["uuid"]
	}
	for _, k := range append(driveOrder(), "efidisk0", "tpmstate0") {
		val, ok := conf[k]
		if !ok {
			continue
		}
		d, err := s.parseDrive(k, val)
		if err != nil {
			continue
		}
		disk := Disk{Interface: k, Volume: d["file"], Media: "disk", SSD: d["ssd"] == "1", Options: map[string]string{}}
		for ok, ov := range d {
			if ok != "file" && ok != "media" && ok != "size" {
				disk.Options[ok] = ov
			}
		}
		if d["media"] == "cdrom" {
			disk.Media = "cdrom"
		}
		if vol, err := s.volumeLocked(v.node, d["file"]); err == nil {
			disk.SizeBytes, disk.Image = vol.size, vol.image
			if disk.Media == "cdrom" && info.CDROM == nil && vol.content == "iso" {
				img := vol.image
				info.CDROM = &img
			}
		}
		info.Disks = append(info.Disks, disk)
	}
	for i := 0; i < 32; i++ {
		k := "net" + itoa(i)
		val, ok := conf[k]
		if !ok {
			continue
		}
		n, err := s.confM.ParseProperty(k, val)
		if err != nil {
			continue
		}
		nic := NIC{Name: k, MAC: n["macaddr"], Model: n["model"], Bridge: n["bridge"]}
		nic.Tag, _ = strconv.Atoi(n["tag"])
		nic.MTU, _ = strconv.Atoi(n["mtu"])
		info.NICs = append(info.NICs, nic)
	}
	if v.cloudinit != nil {
		ci := *v.cloudinit
		info.CloudInit = &ci
	}
	return info
}

// hasCloudInitDrive names the drive holding the cloud-init volume.
func (s *Server) cloudInitDrive(conf map[string]string) string {
	for _, k := range append(driveOrder(), "efidisk0") {
		if val, ok := conf[k]; ok && strings.Contains(strings.SplitN(val, ",", 2)[0], "-cloudinit") {
			return k
		}
	}
	return ""
}
