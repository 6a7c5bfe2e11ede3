package proxmox

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// Drive slots this package uses when the inputs do not say otherwise.
const (
	isoInterface       = "ide2"
	cloudInitInterface = "ide0"
	efiDiskKey         = "efidisk0"
)

var diskInterfaceRE = regexp.MustCompile(`^(scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5]|ide[0-3])$`)

// nicModels are the model keys Proxmox writes as "<model>=<mac>" in netN
// (qemu-server PVE/QemuServer/Network.pm, the net[n] format in the API schema).
var nicModels = []string{"virtio", "e1000", "e1000e", "e1000-82540em", "e1000-82544gc", "e1000-82545em",
	"i82551", "i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "vmxnet3"}

// configPlan is what it takes to bring a VM's configuration to the inputs.
type configPlan struct {
	// Set and Delete go to one POST .../config.
	Set    map[string]any
	Delete []string
	// Then is a second config call, for keys that must be deleted first.
	Then map[string]any
	// Resize grows disks (PUT .../resize) after the config call.
	Resize []diskResize
	// Move moves disks to another storage (POST .../move_disk).
	Move []diskMove
	// RemovedVolumes are volumes of deleted disks; Proxmox keeps them as
	// unusedN entries, which are deleted too so that no volume leaks.
	RemovedVolumes []string
	// Imports are the new disks in Set that are copied from a volume: they
	// reach their size by a resize once they exist.
	Imports []string
}

type diskResize struct {
	Interface string
	SizeGiB   int
}

type diskMove struct {
	Interface string
	Storage   string
}

// empty reports whether the plan changes nothing.
func (p configPlan) empty() bool {
	return len(p.Set) == 0 && len(p.Delete) == 0 && len(p.Then) == 0 && len(p.Resize) == 0 && len(p.Move) == 0
}

// createParams are the parameters of POST /nodes/{node}/qemu for an empty
// VM: the plan from nothing to the inputs.
func createParams(a VirtualMachineArgs) (map[string]any, error) {
	p, err := planConfig(nil, a, pve.VMConfig{})
	if err != nil {
		return nil, err
	}
	return p.Set, nil
}

// planConfig compares the inputs with the live configuration and returns the
// changes. An input that is not given is not managed: Proxmox (or the
// template, or whoever set it) keeps its value, so that a partial program
// never resets settings it does not mention. Settings are cleared by giving
// an empty value (tags: [], description: "", iso: ""). Entries removed from
// a list that is given (disks, network devices, IP configs) are deleted when
// the previous inputs listed them.
func planConfig(old *VirtualMachineArgs, a VirtualMachineArgs, live pve.VMConfig) (configPlan, error) {
	if old == nil {
		old = &VirtualMachineArgs{}
	}
	p := configPlan{Set: map[string]any{}}
	want := scalarConfig(a, live)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		switch {
		case want[k] == "":
			if _, present := live[k]; present {
				p.Delete = append(p.Delete, k)
			}
		case !sameConfigValue(k, want[k], live[k]):
			p.Set[k] = want[k]
		}
	}
	planNICs(&p, old, a, live)
	planIPConfigs(&p, old, a, live)
	if err := planDisks(&p, old, a, live); err != nil {
		return configPlan{}, err
	}
	if err := planDrives(&p, old, a, live); err != nil {
		return configPlan{}, err
	}
	sort.Strings(p.Delete)
	return p, nil
}

// scalarConfig renders the single-valued settings the inputs give; "" means
// the key is to be removed.
func scalarConfig(a VirtualMachineArgs, live pve.VMConfig) map[string]string {
	c := map[string]string{}
	set := func(k string, v *string) {
		if v != nil {
			c[k] = *v
		}
	}
	set("name", a.Name)
	set("description", a.Description)
	if a.Tags != nil {
		// the provider's own tags stay (see pve identity.go)
		keep := pve.SystemTags(pve.SplitTags(live["tags"]))
		c["tags"] = strings.Join(normalizeTags(append(slices.Clone(a.Tags), keep...)), ";")
	}
	if c["name"] == "" {
		delete(c, "name") // an empty name is refused by Check; never a removal
	}
	if cpu := a.CPU; cpu != nil {
		setInt(c, "cores", cpu.Cores)
		setInt(c, "sockets", cpu.Sockets)
		set("cpu", cpu.Type)
	}
	if m := a.Memory; m != nil {
		c["memory"] = strconv.Itoa(m.Dedicated)
		setInt(c, "balloon", m.Floating)
	}
	if a.Bios != nil {
		c["bios"] = string(*a.Bios)
	}
	set("machine", a.Machine)
	if a.ScsiHardware != nil {
		c["scsihw"] = string(*a.ScsiHardware)
	}
	if a.OsType != nil {
		c["ostype"] = string(*a.OsType)
	}
	if a.OnBoot != nil {
		c["onboot"] = boolFlag(*a.OnBoot)
	}
	// agent and smbios1 are property strings with options the inputs do not
	// manage (agent type, fstrim_cloned_disks; SMBIOS manufacturer, serial):
	// set the managed key on the live value, as nicString does
	if g := a.Agent; g != nil {
		ps := pve.ParsePropString(live["agent"])
		if ps.Head != "" {
			ps.KV["enabled"] = ps.Head // the format's default key
		}
		ps.KV["enabled"] = boolFlag(g.Enabled == nil || *g.Enabled)
		c["agent"] = kvList(ps.KV, "enabled")
	}
	if a.SmbiosUUID != nil {
		kv := pve.ParsePropString(live["smbios1"]).KV
		kv["uuid"] = strings.ToLower(*a.SmbiosUUID)
		c["smbios1"] = kvList(kv, "uuid")
	}
	if ci := a.CloudInit; ci != nil {
		c["citype"] = "nocloud"
		if d := ci.DNS; d != nil {
			if d.Servers != nil {
				c["nameserver"] = strings.Join(d.Servers, " ")
			}
			set("searchdomain", d.Domain)
		}
		for i, ip := range ci.IPConfigs {
			key := fmt.Sprintf("ipconfig%d", i)
			c[key] = ipConfigString(ip, live[key])
		}
	}
	if order := bootOrder(a); order != "" {
		c["boot"] = "order=" + order
	}
	return c
}

func setInt(c map[string]string, k string, v *int) {
	if v != nil {
		c[k] = strconv.Itoa(*v)
	}
}

// bootOrder is the first listed disk, then the ISO's drive. It is managed
// only when the inputs define the boot media (an ISO, or disks of a VM
// that is not a clone); a clone keeps its template's order otherwise.
func bootOrder(a VirtualMachineArgs) string {
	var order []string
	if len(a.Disks) > 0 && (a.Clone == nil || a.ISO != nil) {
		order = append(order, a.Disks[0].Interface)
	}
	if a.ISO != nil && *a.ISO != "" {
		order = append(order, isoInterface)
	}
	return strings.Join(order, ";")
}

// ipConfigString renders one ipconfigN. The IPv4 and IPv6 blocks are each
// set as a whole (a block without gateway has none); a block not given keeps
// what the live value has.
func ipConfigString(ip VirtualMachineIpConfig, live string) string {
	kv := pve.ParsePropString(live).KV
	block := func(a *VirtualMachineIpAddress, ipKey, gwKey string) {
		if a == nil {
			return
		}
		kv[ipKey] = a.Address
		delete(kv, gwKey)
		if a.Gateway != nil {
			kv[gwKey] = *a.Gateway
		}
	}
	block(ip.IPv4, "ip", "gw")
	block(ip.IPv6, "ip6", "gw6")
	return kvList(kv, "ip", "gw", "ip6", "gw6")
}

// normalizeTags lower-cases, sorts and de-duplicates tags, as Proxmox
// stores them (tags are case-insensitive unless the datacenter says otherwise).
func normalizeTags(tags []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// sameConfigValue compares a wanted value with the live one by meaning:
// Proxmox may render a value differently from how it was set.
func sameConfigValue(key, want, live string) bool {
	if d, ok := configDefaults[key]; ok && live == "" {
		live = d
	}
	switch key {
	case "tags":
		return strings.Join(normalizeTags(pve.SplitTags(want)), ";") == strings.Join(normalizeTags(pve.SplitTags(live)), ";")
	case "cpu":
		return cpuType(want) == cpuType(live)
	case "memory":
		return memoryMiB(want) == memoryMiB(live)
	case "agent":
		return truthy(agentEnabled(want)) == truthy(agentEnabled(live))
	case "onboot":
		return truthy(want) == truthy(live)
	case "smbios1":
		return strings.EqualFold(pve.ParsePropString(want).KV["uuid"], pve.ParsePropString(live).KV["uuid"])
	case "boot":
		return pve.ParsePropString(want).KV["order"] == pve.ParsePropString(live).KV["order"]
	case "nameserver":
		return strings.Join(strings.Fields(want), " ") == strings.Join(strings.Fields(live), " ")
	case "description":
		return strings.TrimRight(want, "\n") == strings.TrimRight(live, "\n")
	}
	if strings.HasPrefix(key, "ipconfig") {
		return sameKV(pve.ParsePropString(want).KV, pve.ParsePropString(live).KV)
	}
	return want == live
}

// configDefaults are the values Proxmox uses for keys absent from a config
// (the defaults in the API schema, POST /nodes/{node}/qemu).
var configDefaults = map[string]string{
	"cores": "1", "sockets": "1", "memory": "512", "bios": "seabios", "scsihw": "lsi", "ostype": "other",
}

func cpuType(s string) string { return pve.ParsePropString(s).Value("cputype") }

func memoryMiB(s string) string { return pve.ParsePropString(s).Value("current") }

func agentEnabled(s string) string { return pve.ParsePropString(s).Value("enabled") }

func sameKV(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
