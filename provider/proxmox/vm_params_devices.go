package proxmox

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// liveNIC is a netN value read back.
type liveNIC struct {
	Model string
	MAC   string
	KV    map[string]string
}

func parseNIC(s string) liveNIC {
	ps := pve.ParsePropString(s)
	n := liveNIC{KV: ps.KV}
	for _, m := range nicModels {
		if mac, ok := ps.KV[m]; ok {
			n.Model, n.MAC = m, strings.ToUpper(mac)
			delete(n.KV, m)
			return n
		}
	}
	n.Model = ps.KV["model"]
	if n.Model == "" {
		n.Model = ps.Head
	}
	n.MAC = strings.ToUpper(ps.KV["macaddr"])
	delete(n.KV, "model")
	delete(n.KV, "macaddr")
	return n
}

// nicString renders a NIC. Settings the inputs do not give keep the live
// NIC's values (its MAC, model, VLAN, MTU, firewall, rate, queues); a new NIC
// gets Proxmox's defaults and a VirtIO model. vlanId 0 removes the tag.
func nicString(d VirtualMachineNetworkDevice, live *liveNIC) string {
	kv := map[string]string{}
	mac, model := "", "virtio"
	if live != nil {
		for k, v := range live.KV {
			kv[k] = v
		}
		mac = live.MAC
		if live.Model != "" {
			model = live.Model
		}
	}
	if d.Model != nil {
		model = string(*d.Model)
	}
	if d.MACAddress != nil {
		mac = strings.ToUpper(*d.MACAddress)
	}
	kv["bridge"] = d.Bridge
	if d.VLANID != nil {
		setOrDrop(kv, "tag", d.VLANID)
	}
	if d.MTU != nil {
		kv["mtu"] = strconv.Itoa(*d.MTU)
	}
	if d.Firewall != nil {
		if *d.Firewall {
			kv["firewall"] = "1"
		} else {
			delete(kv, "firewall")
		}
	}
	head := model
	if mac != "" {
		head = model + "=" + mac
	}
	return head + "," + kvList(kv, "bridge", "firewall", "mtu", "tag")
}

// setOrDrop sets k to a positive v and removes it for 0.
func setOrDrop(kv map[string]string, k string, v *int) {
	if *v > 0 {
		kv[k] = strconv.Itoa(*v)
	} else {
		delete(kv, k)
	}
}

func sameNIC(want, live string) bool {
	w, l := parseNIC(want), parseNIC(live)
	if w.Model != l.Model || (w.MAC != "" && w.MAC != l.MAC) {
		return false
	}
	if !truthy(w.KV["firewall"]) != !truthy(l.KV["firewall"]) {
		return false
	}
	delete(w.KV, "firewall")
	delete(l.KV, "firewall")
	return sameKV(w.KV, l.KV)
}

func planNICs(p *configPlan, old *VirtualMachineArgs, a VirtualMachineArgs, live pve.VMConfig) {
	if a.NetworkDevices == nil {
		return // not managed
	}
	for i, d := range a.NetworkDevices {
		key := fmt.Sprintf("net%d", i)
		var ln *liveNIC
		if v, ok := live[key]; ok {
			n := parseNIC(v)
			ln = &n
		}
		want := nicString(d, ln)
		if v, ok := live[key]; !ok || !sameNIC(want, v) {
			p.Set[key] = want
		}
	}
	for i := len(a.NetworkDevices); i < len(old.NetworkDevices); i++ {
		if key := fmt.Sprintf("net%d", i); live[key] != "" {
			p.Delete = append(p.Delete, key)
		}
	}
}

func planIPConfigs(p *configPlan, old *VirtualMachineArgs, a VirtualMachineArgs, live pve.VMConfig) {
	if a.CloudInit == nil || a.CloudInit.IPConfigs == nil || old.CloudInit == nil {
		return
	}
	for i := len(a.CloudInit.IPConfigs); i < len(old.CloudInit.IPConfigs); i++ {
		if key := fmt.Sprintf("ipconfig%d", i); live[key] != "" {
			p.Delete = append(p.Delete, key)
		}
	}
}

// liveDisk is a drive value read back.
type liveDisk struct {
	Volume  string
	Storage string
	// SizeGiB is the size rounded down to whole GiB.
	SizeGiB   int
	CDROM     bool
	CloudInit bool
	KV        map[string]string
}

func parseDisk(s string) liveDisk {
	ps := pve.ParsePropString(s)
	d := liveDisk{Volume: ps.Head, KV: ps.KV}
	if f, ok := ps.KV["file"]; ok {
		d.Volume = f
		delete(d.KV, "file")
	}
	d.Storage, _, _ = strings.Cut(d.Volume, ":")
	d.SizeGiB = sizeGiB(ps.KV["size"])
	d.CDROM = ps.KV["media"] == "cdrom"
	d.CloudInit = strings.Contains(d.Volume, "cloudinit")
	return d
}

// sizeGiB reads a Proxmox disk size ("20G", "512M", "1T", "4194304K") in whole GiB.
func sizeGiB(s string) int { return int(pve.DiskSizeGiB(s) + 1e-9) }

// diskOptions applies the options the inputs manage onto kv.
func diskOptions(d VirtualMachineDisk, kv map[string]string) {
	flag := func(k string, v *bool, on string) {
		if v == nil {
			return
		}
		if *v {
			kv[k] = on
		} else {
			delete(kv, k)
		}
	}
	flag("ssd", d.SSD, "1")
	flag("discard", d.Discard, "on")
	flag("iothread", d.IOThread, "1")
	if d.Cache != nil {
		if *d.Cache == "none" {
			delete(kv, "cache")
		} else {
			kv["cache"] = string(*d.Cache)
		}
	}
}

func sameDiskOptions(a, b map[string]string) bool {
	for _, k := range []string{"ssd", "iothread"} {
		if truthy(a[k]) != truthy(b[k]) {
			return false
		}
	}
	return (a["discard"] == "on") == (b["discard"] == "on") && orNone(a["cache"]) == orNone(b["cache"])
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func planDisks(p *configPlan, old *VirtualMachineArgs, a VirtualMachineArgs, live pve.VMConfig) error {
	if a.Disks == nil {
		return nil // not managed
	}
	wanted := map[string]bool{}
	for _, d := range a.Disks {
		wanted[d.Interface] = true
		cur, exists := live[d.Interface]
		if !exists {
			kv := map[string]string{}
			diskOptions(d, kv)
			if d.ImportFrom != nil && *d.ImportFrom != "" {
				// "<storage>:0,import-from=<volume>" is the only form Proxmox
				// accepts (qemu-server API2/Qemu.pm check_drive_param; the
				// scsiN/virtioN/... description in apidata 8.4.0 and 9.1.3:
				// "Use STORAGE_ID:0 and the 'import-from' parameter"); the
				// copy has the image's (virtual) size and grows to d.Size
				// afterwards (create_disks, import_from_volid)
				kv["import-from"] = *d.ImportFrom
				p.Set[d.Interface] = d.Storage + ":0" + optSuffix(kv)
				p.Imports = append(p.Imports, d.Interface)
				continue
			}
			p.Set[d.Interface] = fmt.Sprintf("%s:%d", d.Storage, d.Size) + optSuffix(kv)
			continue
		}
		ld := parseDisk(cur)
		if ld.CDROM || ld.CloudInit {
			return fmt.Errorf("disks: %s holds a %s drive on this VM; choose another interface for the disk",
				d.Interface, map[bool]string{true: "cloud-init", false: "CD"}[ld.CloudInit])
		}
		if ld.SizeGiB > d.Size {
			return fmt.Errorf("disks: %s is %d GiB and cannot shrink to %d GiB (Proxmox cannot shrink disks); "+
				"set size to %d or more", d.Interface, ld.SizeGiB, d.Size, ld.SizeGiB)
		}
		kv := map[string]string{}
		for k, v := range ld.KV {
			kv[k] = v
		}
		diskOptions(d, kv)
		if !sameDiskOptions(kv, ld.KV) {
			p.Set[d.Interface] = ld.Volume + optSuffix(kv)
		}
		if d.Size > ld.SizeGiB {
			p.Resize = append(p.Resize, diskResize{Interface: d.Interface, SizeGiB: d.Size})
		}
		if d.Storage != "" && d.Storage != ld.Storage {
			p.Move = append(p.Move, diskMove{Interface: d.Interface, Storage: d.Storage})
		}
	}
	for _, d := range old.Disks {
		if wanted[d.Interface] {
			continue
		}
		if cur, ok := live[d.Interface]; ok {
			p.Delete = append(p.Delete, d.Interface)
			p.RemovedVolumes = append(p.RemovedVolumes, parseDisk(cur).Volume)
		}
	}
	return nil
}

func optSuffix(kv map[string]string) string {
	if s := kvList(kv, "cache", "discard", "import-from", "iothread", "ssd", "size"); s != "" {
		return "," + s
	}
	return ""
}

// planDrives handles the ISO, the cloud-init drive and the EFI disk.
func planDrives(p *configPlan, old *VirtualMachineArgs, a VirtualMachineArgs, live pve.VMConfig) error {
	if a.ISO != nil {
		cur, ok := live[isoInterface]
		if ok {
			if ld := parseDisk(cur); !ld.CDROM || ld.CloudInit {
				return fmt.Errorf("iso: %s already holds a %s on this VM; the ISO needs that drive",
					isoInterface, map[bool]string{true: "cloud-init drive", false: "disk"}[ld.CloudInit])
			}
		}
		switch {
		case *a.ISO == "" && ok:
			p.Delete = append(p.Delete, isoInterface) // eject: remove the CD drive
		case *a.ISO != "" && (!ok || parseDisk(cur).Volume != *a.ISO):
			p.Set[isoInterface] = *a.ISO + ",media=cdrom"
		}
	}

	if ci := a.CloudInit; ci != nil {
		iface := cloudInitSlot(ci, live)
		cur, ok := live[iface]
		switch {
		case !ok:
			p.Set[iface] = ci.Storage + ":cloudinit"
		case !parseDisk(cur).CloudInit:
			return fmt.Errorf("cloudInit: %s already holds another drive on this VM; set cloudInit.interface "+
				"to a free slot", iface)
		case parseDisk(cur).Storage != ci.Storage:
			// the drive is generated from the config, so it is re-created
			// on the new storage rather than moved: delete now, add after
			p.Delete = append(p.Delete, iface)
			p.Then = map[string]any{iface: ci.Storage + ":cloudinit"}
		}
	}

	if e := a.EfiDisk; e != nil {
		cur, ok := live[efiDiskKey]
		switch {
		case !ok:
			p.Set[efiDiskKey] = fmt.Sprintf("%s:1,efitype=4m,pre-enrolled-keys=%s", e.Storage,
				boolFlag(e.PreEnrolledKeys != nil && *e.PreEnrolledKeys))
		case parseDisk(cur).Storage != e.Storage:
			p.Move = append(p.Move, diskMove{Interface: efiDiskKey, Storage: e.Storage})
		}
	}
	return nil
}

// cloudInitSlot is the drive slot of the cloud-init drive: the one the
// inputs name, else the one the VM (or its template) already has, else ide0.
func cloudInitSlot(ci *VirtualMachineCloudInit, live pve.VMConfig) string {
	if ci.Interface != nil {
		return *ci.Interface
	}
	if iface, ok := findCloudInitDrive(live); ok {
		return iface
	}
	return cloudInitInterface
}

func findCloudInitDrive(live pve.VMConfig) (string, bool) {
	for _, k := range slices.Sorted(maps.Keys(live)) {
		if diskInterfaceRE.MatchString(k) && parseDisk(live[k]).CloudInit {
			return k, true
		}
	}
	return "", false
}
