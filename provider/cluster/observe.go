package cluster

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
)

// diskKey matches the VM config keys of disks (pve-api: scsi[n], virtio[n],
// sata[n], ide[n]).
var diskKey = regexp.MustCompile(`^(scsi|virtio|sata|ide)(\d+)$`)

var netKey = regexp.MustCompile(`^net(\d+)$`)

// observeVM parses a VM configuration as Proxmox returns it (GET
// /nodes/{node}/qemu/{vmid}/config, every value a string) into what the
// plan can rebuild a node from.
func observeVM(vmid int, host string, cfg map[string]string) plan.ObservedVM {
	vm := plan.ObservedVM{
		VMID: vmid, Host: host, Name: cfg["name"],
		Tags:         splitTags(cfg["tags"]),
		Template:     cfg["template"] == "1",
		Cores:        atoiOr(cfg["cores"], 1), // pve-api defaults: cores 1, sockets 1, memory 512
		Sockets:      atoiOr(cfg["sockets"], 1),
		CPUType:      cpuType(cfg["cpu"]),
		MemoryMiB:    atoiOr(propValue(cfg["memory"], "current"), 512),
		SearchDomain: cfg["searchdomain"],
	}
	if ns := strings.Fields(cfg["nameserver"]); len(ns) > 0 {
		vm.DNSServers = ns
	}
	var keys []string
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	nics := map[int]plan.NICConfig{}
	for _, k := range keys {
		v := cfg[k]
		if m := diskKey.FindStringSubmatch(k); m != nil {
			props := parseProps(v)
			media := props["media"]
			switch {
			case strings.Contains(props[""], "cloudinit"):
			case media == "cdrom":
				if vol := props[""]; vol != "" && vol != "none" && vm.ISOStorage == "" {
					vm.ISOStorage, _, _ = strings.Cut(vol, ":")
					vm.ISOVolume = vol
				}
			default:
				storage, _, _ := strings.Cut(props[""], ":")
				vm.Disks = append(vm.Disks, plan.Disk{Interface: k, Storage: storage, SizeGiB: sizeGiB(props["size"])})
			}
			continue
		}
		if m := netKey.FindStringSubmatch(k); m != nil {
			i, _ := strconv.Atoi(m[1])
			n := nics[i]
			props := parseProps(v)
			for _, model := range []string{"virtio", "e1000", "e1000e", "rtl8139", "vmxnet3"} {
				if mac, ok := props[model]; ok {
					n.MAC = strings.ToUpper(mac)
				}
			}
			if mac := props["macaddr"]; mac != "" {
				n.MAC = strings.ToUpper(mac)
			}
			n.Bridge = props["bridge"]
			n.VLAN = atoiOr(props["tag"], 0)
			n.MTU = atoiOr(props["mtu"], 0)
			nics[i] = n
		}
	}
	for i := 0; ; i++ {
		n, ok := nics[i]
		if !ok {
			break
		}
		ip := parseProps(cfg["ipconfig"+strconv.Itoa(i)])
		if a := ip["ip"]; a != "" && a != "dhcp" {
			n.Address = a
			n.Gateway = ip["gw"]
		}
		vm.NICs = append(vm.NICs, n)
	}
	return vm
}

// splitTags splits Proxmox's tag list (";" separated; "," and spaces are
// accepted on input by pve-common's tag parsing).
func splitTags(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

// parseProps parses a Proxmox property string ("local-lvm:vm-1-disk-0,size=20G")
// into its keys; a value without a key is stored under "".
func parseProps(s string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			out[""] = part
			continue
		}
		out[k] = v
	}
	return out
}

// propValue is the value of key in a property string, or its key-less
// value (memory is "4096" or "current=4096").
func propValue(s, key string) string {
	p := parseProps(s)
	if v, ok := p[key]; ok {
		return v
	}
	return p[""]
}

// cpuType is the model of a cpu setting ("host", "cputype=host,flags=+aes").
func cpuType(s string) string {
	if s == "" {
		return "kvm64" // pve-api: cpu cputype default kvm64
	}
	return propValue(s, "cputype")
}

// sizeGiB converts a Proxmox disk size ("20G", "512M", "1T", bytes) to
// whole GiB, rounding up.
func sizeGiB(s string) int {
	if s == "" {
		return 0
	}
	unit := s[len(s)-1]
	num := s
	mult := 1.0 / (1 << 30) // bytes
	switch unit {
	case 'K', 'k':
		mult, num = 1.0/(1<<20), s[:len(s)-1]
	case 'M', 'm':
		mult, num = 1.0/1024, s[:len(s)-1]
	case 'G', 'g':
		mult, num = 1, s[:len(s)-1]
	case 'T', 't':
		mult, num = 1024, s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0
	}
	g := f * mult
	if g != float64(int(g)) {
		return int(g) + 1
	}
	return int(g)
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return n
}
