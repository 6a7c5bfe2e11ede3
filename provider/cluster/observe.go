package cluster

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
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
		Tags:         pve.UserTags(pve.SplitTags(cfg["tags"])),
		OnBoot:       flagOn(cfg["onboot"]),
		Agent:        flagOn(pve.ParsePropString(cfg["agent"]).Value("enabled")),
		Template:     cfg["template"] == "1",
		Cores:        atoiOr(cfg["cores"], 1), // pve-api defaults: cores 1, sockets 1, memory 512
		Sockets:      atoiOr(cfg["sockets"], 1),
		CPUType:      cpuType(cfg["cpu"]),
		MemoryMiB:    atoiOr(pve.ParsePropString(cfg["memory"]).Value("current"), 512),
		SearchDomain: cfg["searchdomain"],
	}
	if ns := strings.Fields(cfg["nameserver"]); len(ns) > 0 {
		vm.DNSServers = ns
	}
	nics := map[int]plan.NICConfig{}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		v := cfg[k]
		if m := diskKey.FindStringSubmatch(k); m != nil {
			props := pve.ParsePropString(v)
			media := props.KV["media"]
			switch {
			case strings.Contains(props.Head, "cloudinit"):
			case media == "cdrom":
				if vol := props.Head; vol != "" && vol != "none" && vm.ISOStorage == "" {
					vm.ISOStorage, _, _ = strings.Cut(vol, ":")
					vm.ISOVolume = vol
				}
			default:
				storage, _, _ := strings.Cut(props.Head, ":")
				vm.Disks = append(vm.Disks, plan.Disk{Interface: k, Storage: storage, SizeGiB: sizeGiB(props.KV["size"])})
			}
			continue
		}
		if m := netKey.FindStringSubmatch(k); m != nil {
			i, _ := strconv.Atoi(m[1])
			n := nics[i]
			props := pve.ParsePropString(v)
			for _, model := range []string{"virtio", "e1000", "e1000e", "rtl8139", "vmxnet3"} {
				if mac, ok := props.KV[model]; ok {
					n.MAC = strings.ToUpper(mac)
				}
			}
			if mac := props.KV["macaddr"]; mac != "" {
				n.MAC = strings.ToUpper(mac)
			}
			n.Bridge = props.KV["bridge"]
			n.VLAN = atoiOr(props.KV["tag"], 0)
			n.MTU = atoiOr(props.KV["mtu"], 0)
			nics[i] = n
		}
	}
	for i := 0; ; i++ {
		n, ok := nics[i]
		if !ok {
			break
		}
		ip := pve.ParsePropString(cfg["ipconfig"+strconv.Itoa(i)]).KV
		if a := ip["ip"]; a != "" && a != "dhcp" {
			n.Address = a
			n.Gateway = ip["gw"]
		}
		vm.NICs = append(vm.NICs, n)
	}
	return vm
}

// cpuType is the model of a cpu setting ("host", "cputype=host,flags=+aes").
func cpuType(s string) string {
	if s == "" {
		return "kvm64" // pve-api: cpu cputype default kvm64
	}
	return pve.ParsePropString(s).Value("cputype")
}

// sizeGiB converts a Proxmox disk size ("20G", "512M", "1T", bytes) to
// whole GiB, rounding up.
func sizeGiB(s string) int { return int(math.Ceil(pve.DiskSizeGiB(s) - 1e-9)) }

// flagOn reads a pve-api boolean ("1", "on", "yes", "true").
func flagOn(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "on", "yes", "true":
		return true
	}
	return false
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return n
}
