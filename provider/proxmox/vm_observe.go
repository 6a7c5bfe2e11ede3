package proxmox

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// observation is what Read learns about a VM.
type observation struct {
	Ref    pve.VMRef
	Config pve.VMConfig
	Status pve.VMStatus
	Pool   string
}

// observeArgs reads a configuration back into inputs, every setting Proxmox
// shows included: this is what an import produces.
func observeArgs(o observation) VirtualMachineArgs {
	c := o.Config
	a := VirtualMachineArgs{Node: o.Ref.Node, VMID: ptr(o.Ref.VMID)}
	str := func(k string) *string {
		if v, ok := c[k]; ok && v != "" {
			return &v
		}
		return nil
	}
	a.Name = str("name")
	if d, ok := c["description"]; ok {
		if d = pve.WithoutCreatingLine(d); d != "" {
			a.Description = &d
		}
	}
	// the provider's own tags are not the program's (see pve identity.go)
	if t := normalizeTags(pve.UserTags(pve.SplitTags(c["tags"]))); len(t) > 0 {
		a.Tags = t
	}
	if o.Pool != "" {
		a.Pool = ptr(o.Pool)
	}
	if v, ok := c[isoInterface]; ok {
		if d := parseDisk(v); d.CDROM && !d.CloudInit && d.Volume != "none" && d.Volume != "" {
			a.ISO = ptr(d.Volume)
		}
	}
	a.CPU = &VirtualMachineCpu{Cores: ptr(intOr(c["cores"], 1)), Sockets: ptr(intOr(c["sockets"], 1))}
	if t := cpuType(c["cpu"]); t != "" {
		a.CPU.Type = ptr(t)
	}
	a.Memory = &VirtualMachineMemory{Dedicated: intOr(memoryMiB(c["memory"]), 512)}
	if b, ok := c["balloon"]; ok {
		a.Memory.Floating = ptr(intOr(b, 0))
	}
	if v := str("bios"); v != nil {
		a.Bios = ptr(Bios(*v))
	}
	a.Machine = str("machine")
	if v := str("scsihw"); v != nil {
		a.ScsiHardware = ptr(ScsiHardware(*v))
	}
	if v := str("ostype"); v != nil {
		a.OsType = ptr(OsType(*v))
	}
	if v, ok := c["onboot"]; ok {
		a.OnBoot = ptr(truthy(v))
	}
	if v, ok := c[efiDiskKey]; ok {
		d := parseDisk(v)
		a.EfiDisk = &VirtualMachineEfiDisk{Storage: d.Storage, PreEnrolledKeys: ptr(truthy(d.KV["pre-enrolled-keys"]))}
	}
	a.Disks = observeDisks(c)
	a.NetworkDevices = observeNICs(c)
	a.CloudInit = observeCloudInit(c)
	if v, ok := c["agent"]; ok {
		a.Agent = &VirtualMachineAgent{Enabled: ptr(truthy(agentEnabled(v)))}
	}
	if u := pve.ParsePropString(c["smbios1"]).KV["uuid"]; u != "" {
		a.SmbiosUUID = ptr(strings.ToLower(u))
	}
	if !o.Status.Running() {
		a.Started = ptr(false)
	}
	if truthy(c["template"]) {
		a.Template = ptr(true)
	}
	return a
}

func intOr(s string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		return n
	}
	return def
}

func observeDisks(c pve.VMConfig) []VirtualMachineDisk {
	var out []VirtualMachineDisk
	for _, k := range diskKeys(c) {
		d := parseDisk(c[k])
		if d.CDROM || d.CloudInit {
			continue
		}
		out = append(out, observeDisk(k, d))
	}
	return out
}

func observeDisk(iface string, d liveDisk) VirtualMachineDisk {
	vd := VirtualMachineDisk{Interface: iface, Storage: d.Storage, Size: d.SizeGiB}
	if truthy(d.KV["ssd"]) {
		vd.SSD = ptr(true)
	}
	if d.KV["discard"] == "on" {
		vd.Discard = ptr(true)
	}
	if truthy(d.KV["iothread"]) {
		vd.IOThread = ptr(true)
	}
	if c := d.KV["cache"]; c != "" {
		vd.Cache = ptr(DiskCache(c))
	}
	return vd
}

// diskKeys lists the drive keys of a config in bus order (ide, sata, scsi,
// virtio) and slot number.
func diskKeys(c pve.VMConfig) []string {
	var keys []string
	for k := range c {
		if diskInterfaceRE.MatchString(k) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		bi, ni := splitSlot(keys[i])
		bj, nj := splitSlot(keys[j])
		if bi != bj {
			return bi < bj
		}
		return ni < nj
	})
	return keys
}

func splitSlot(k string) (string, int) {
	i := strings.IndexAny(k, "0123456789")
	n, _ := strconv.Atoi(k[i:])
	return k[:i], n
}

func observeNICs(c pve.VMConfig) []VirtualMachineNetworkDevice {
	var out []VirtualMachineNetworkDevice
	for i := 0; ; i++ {
		v, ok := c[fmt.Sprintf("net%d", i)]
		if !ok {
			return out
		}
		out = append(out, observeNIC(parseNIC(v)))
	}
}

func observeNIC(n liveNIC) VirtualMachineNetworkDevice {
	d := VirtualMachineNetworkDevice{Bridge: n.KV["bridge"], Model: ptr(NetworkModel(n.Model))}
	if n.MAC != "" {
		d.MACAddress = ptr(n.MAC)
	}
	if v, ok := n.KV["tag"]; ok {
		d.VLANID = ptr(intOr(v, 0))
	}
	if v, ok := n.KV["mtu"]; ok {
		d.MTU = ptr(intOr(v, 0))
	}
	if truthy(n.KV["firewall"]) {
		d.Firewall = ptr(true)
	}
	return d
}

func observeCloudInit(c pve.VMConfig) *VirtualMachineCloudInit {
	iface, ok := findCloudInitDrive(c)
	if !ok {
		return nil
	}
	ci := &VirtualMachineCloudInit{Storage: parseDisk(c[iface]).Storage}
	if iface != cloudInitInterface {
		ci.Interface = ptr(iface)
	}
	for i := 0; ; i++ {
		v, ok := c[fmt.Sprintf("ipconfig%d", i)]
		if !ok {
			break
		}
		ci.IPConfigs = append(ci.IPConfigs, observeIPConfig(v))
	}
	ns, hasNS := c["nameserver"]
	sd, hasSD := c["searchdomain"]
	if hasNS || hasSD {
		ci.DNS = &VirtualMachineDns{}
		if hasNS {
			ci.DNS.Servers = strings.Fields(ns)
		}
		if hasSD {
			ci.DNS.Domain = ptr(sd)
		}
	}
	return ci
}

func observeIPConfig(s string) VirtualMachineIpConfig {
	kv := pve.ParsePropString(s).KV
	var ip VirtualMachineIpConfig
	if v, ok := kv["ip"]; ok {
		ip.IPv4 = &VirtualMachineIpAddress{Address: v}
		if gw, ok := kv["gw"]; ok {
			ip.IPv4.Gateway = ptr(gw)
		}
	}
	if v, ok := kv["ip6"]; ok {
		ip.IPv6 = &VirtualMachineIpAddress{Address: v}
		if gw, ok := kv["gw6"]; ok {
			ip.IPv6.Gateway = ptr(gw)
		}
	}
	return ip
}

func ptr[T any](v T) *T { return &v }
