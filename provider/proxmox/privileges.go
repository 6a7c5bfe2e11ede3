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

// The provider's least-privilege recipe: the roles the README's "Proxmox
// privileges" section creates, and where it grants them. Each privilege is
// there because an API call of the provider needs it (the permissions
// entries of the PVE 9.1 API schema and the checks qemu-server,
// pve-storage and pve-manager make in their handlers); the Check of each
// resource asks Proxmox (GET /access/permissions) whether the token holds
// what its inputs need, so that a missing privilege fails the preview, not
// a later update or the destroy.
type recipeRole struct {
	Name  string
	Privs []string
	// Path is where the recipe grants the role ("<storage>" and "<pool>"
	// stand for the user's own).
	Path string
	// For says what the role is for.
	For string
}

// vmRolePrivs are the VM privileges (role ProxmoxTalosVM). On PVE 8 the
// guest agent's read calls need VM.Monitor instead of VM.GuestAgent.Audit
// (which PVE 9.0 introduced; pve-access-control commit 922f710).
var vmRolePrivs = []string{"VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU",
	"VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network",
	"VM.Config.Options", "VM.GuestAgent.Audit", "VM.PowerMgmt"}

var recipeRoles = []recipeRole{
	{"ProxmoxTalosVM", vmRolePrivs, "/vms",
		"create, configure, clone, convert to a template, start, stop and destroy VMs; read their config, status and guest agent"},
	{"ProxmoxTalosDisk", []string{"Datastore.AllocateSpace"}, "/storage/<disk storage>",
		"allocate VM disks (and clones' disks) on the storage, and see it in the node's storage list"},
	{"ProxmoxTalosImage", []string{"Datastore.Allocate", "Datastore.AllocateTemplate", "Datastore.Audit"}, "/storage/<ISO storage>",
		"download ISOs and disk images (DownloadFile), list them, delete them on destroy; lets VMs use them"},
	{"ProxmoxTalosNode", []string{"Sys.AccessNetwork", "Sys.Audit"}, "/nodes",
		"let a node download from a URL (DownloadFile); read node memory for the preview's memory check and other users' tasks that hold a VM lock"},
	{"ProxmoxTalosNetwork", []string{"SDN.Use"}, "/sdn/zones/localnetwork",
		"attach VM network devices to the node's bridges (PVE 8+ checks SDN.Use on /sdn/zones/localnetwork/<bridge>)"},
	{"PVEPoolAdmin", []string{"Pool.Allocate", "Pool.Audit"}, "/pool/<pool>",
		"only with a VM's pool input: check the pool exists, put the VM in it or take it out (built-in role)"},
}

// need is one privilege requirement of a resource's inputs.
type need struct {
	// Input is the input the requirement comes from ("" for the resource
	// as a whole).
	Input string
	// Path is the ACL path; Privs are needed there, all of them, or one of
	// them with Any.
	Path  string
	Privs []string
	Any   bool
	// Inherit: the object does not exist yet (a VM without vmId), so the
	// privileges must propagate from Path to the paths below it.
	Inherit bool
	// Or is another grant that satisfies the need: the pool's ACL for a VM
	// in a pool, Sys.Audit and Sys.Modify on / for a download.
	Or *need
	// Role is the recipe role that holds the privileges.
	Role string
	// Why says what the provider does with them.
	Why string
}

// privilegeOf maps a VM config key to the privilege qemu-server asks for
// to set it (src/PVE/API2/Qemu.pm $check_vm_modify_config_perm and its
// option groups; drives by what they hold, as $check_drive_perms; tags by
// assert_tag_permissions). Cloud-init keys and ipconfigN need
// VM.Config.Cloudinit or VM.Config.Network.
func privilegeOf(key, value string) []string {
	prefix := strings.TrimRight(key, "0123456789")
	indexed := prefix != key
	switch {
	case indexed && (prefix == "scsi" || prefix == "virtio" || prefix == "sata" || prefix == "ide") || key == "efidisk0" || key == "tpmstate0":
		switch {
		case strings.Contains(value, "cloudinit"):
			return []string{"VM.Config.Cloudinit", "VM.Config.CDROM"}
		case strings.Contains(value, "media=cdrom"):
			return []string{"VM.Config.CDROM"}
		}
		return []string{"VM.Config.Disk"}
	case indexed && prefix == "net":
		return []string{"VM.Config.Network"}
	}
	for priv, keys := range configKeyPrivs {
		if slices.Contains(strings.Fields(keys), key) {
			return []string{priv}
		}
	}
	return nil
}

var configKeyPrivs = map[string]string{
	"VM.Config.CPU":     "cores cpu cpulimit cpuunits numa sockets vcpus",
	"VM.Config.Memory":  "memory balloon shares allow-ksm",
	"VM.Config.HWType":  "acpi hotplug kvm machine scsihw smbios1 tablet vga watchdog",
	"VM.Config.Options": "agent autostart bios description keyboard localtime name onboot ostype protection reboot startup tdf template tags",
	"VM.Config.Disk":    "boot bootdisk",
}

var cloudInitKeyRE = regexp.MustCompile(`^(ipconfig\d+|cicustom|cipassword|citype|ciuser|ciupgrade|nameserver|searchdomain|sshkeys)$`)

// vmNeeds are the privileges a VirtualMachine with inputs a needs for its
// whole life: create (or clone), every update its inputs can bring, reads,
// power actions and destroy. keys are the config keys and values it sets
// (createParams); source is the config of the clone source when known;
// pveVersion picks the guest agent privilege; u tells which inputs are
// known at preview. oldPool is the pool the previous inputs named: taking
// the VM out of it (pool "" or another pool; an unset pool is not managed)
// needs Pool.Allocate there too.
func vmNeeds(a VirtualMachineArgs, keys map[string]any, source map[string]string, oldPool, pveVersion string, u unknowns) []need {
	vmPath, inherit, pool := "/vms", true, ""
	if a.VMID != nil && u.known("vmId") {
		vmPath, inherit = fmt.Sprintf("/vms/%d", *a.VMID), false
	}
	if a.Pool != nil && *a.Pool != "" && u.known("pool") {
		pool = *a.Pool
	}
	vm := func(input, why string, privs ...string) need {
		n := need{Input: input, Path: vmPath, Privs: privs, Inherit: inherit, Role: "ProxmoxTalosVM", Why: why}
		if pool != "" {
			// a pool's roles reach its VMs (RPCEnvironment.pm
			// compile_acl_path); create accepts VM.Allocate on the pool
			n.Or = &need{Path: "/pool/" + pool, Privs: privs, Role: "ProxmoxTalosVM"}
		}
		return n
	}
	needs := []need{vm("", "to create, read, start, stop and destroy the VM", "VM.Allocate", "VM.Audit", "VM.PowerMgmt")}
	byPriv := map[string][]string{}
	var ciKeys []string
	for k, v := range keys {
		if cloudInitKeyRE.MatchString(k) {
			ciKeys = append(ciKeys, k)
			continue
		}
		for _, p := range privilegeOf(k, fmt.Sprint(v)) {
			byPriv[p] = append(byPriv[p], k)
		}
	}
	if a.Disks != nil || a.EfiDisk != nil {
		byPriv["VM.Config.Disk"] = append(byPriv["VM.Config.Disk"], "disks")
	}
	if a.ISO != nil {
		byPriv["VM.Config.CDROM"] = append(byPriv["VM.Config.CDROM"], "iso")
	}
	if a.CloudInit != nil {
		// the drive, and PUT .../cloudinit regenerating it
		byPriv["VM.Config.Cloudinit"] = append(byPriv["VM.Config.Cloudinit"], "cloudInit")
		byPriv["VM.Config.CDROM"] = append(byPriv["VM.Config.CDROM"], "cloudInit")
	}
	if a.Template != nil && *a.Template {
		byPriv["VM.Allocate"] = append(byPriv["VM.Allocate"], "template")
	}
	if agentEnabledIn(a) || (a.Clone != nil && truthy(agentEnabled(source["agent"]))) {
		p := "VM.GuestAgent.Audit"
		if major, _ := strconv.Atoi(strings.SplitN(pveVersion, ".", 2)[0]); major > 0 && major < 9 {
			p = "VM.Monitor"
		}
		byPriv[p] = append(byPriv[p], "agent")
	}
	for _, p := range slices.Sorted(maps.Keys(byPriv)) {
		ks := byPriv[p]
		sort.Strings(ks)
		needs = append(needs, vm(inputOfKeys(ks), "to set "+strings.Join(slices.Compact(slices.Clone(ks)), ", "), p))
	}
	if len(ciKeys) > 0 {
		sort.Strings(ciKeys)
		n := vm("cloudInit", "to set "+strings.Join(ciKeys, ", "), "VM.Config.Cloudinit", "VM.Config.Network")
		n.Any = true
		if n.Or != nil {
			n.Or.Any = true
		}
		needs = append(needs, n)
	}
	if a.Pool != nil && oldPool != "" && oldPool != pool && u.known("pool") {
		needs = append(needs, need{Input: "pool", Path: "/pool/" + oldPool, Privs: []string{"Pool.Allocate"},
			Role: "PVEPoolAdmin", Why: "to take the VM out of pool " + oldPool})
	}
	return append(needs, vmResourceNeeds(a, source, pool, u)...)
}

// vmResourceNeeds are what a VM needs outside /vms: its storages, bridges,
// node, pool and clone source.
func vmResourceNeeds(a VirtualMachineArgs, source map[string]string, pool string, u unknowns) []need {
	var needs []need
	space := func(input, storage, why string) {
		if storage != "" {
			needs = append(needs, need{Input: input, Path: "/storage/" + storage, Privs: []string{"Datastore.AllocateSpace"},
				Role: "ProxmoxTalosDisk", Why: why})
		}
	}
	read := func(input, volume, why string) {
		// pve-storage check_volume_access for ISOs and import images:
		// Datastore.Allocate, else AllocateSpace or Audit
		if sid, _, ok := strings.Cut(volume, ":"); ok && u.known(input) {
			needs = append(needs, need{Input: input, Path: "/storage/" + sid,
				Privs: []string{"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.Audit"},
				Any:   true, Role: "ProxmoxTalosImage", Why: why})
		}
	}
	for i, d := range a.Disks {
		space(fmt.Sprintf("disks[%d].storage", i), d.Storage, "to allocate disk "+d.Interface)
		if d.ImportFrom != nil {
			read(fmt.Sprintf("disks[%d].importFrom", i), *d.ImportFrom, "to read the image disk "+d.Interface+" is imported from")
		}
	}
	if a.EfiDisk != nil {
		space("efiDisk.storage", a.EfiDisk.Storage, "to allocate the EFI disk")
	}
	if a.ISO != nil {
		read("iso", *a.ISO, "to insert the ISO")
	}
	for i, n := range a.NetworkDevices {
		if n.Bridge == "" {
			continue
		}
		path := "/sdn/zones/localnetwork/" + n.Bridge
		if n.VLANID != nil && *n.VLANID > 0 {
			path += fmt.Sprintf("/%d", *n.VLANID)
		}
		needs = append(needs, need{Input: fmt.Sprintf("networkDevices[%d].bridge", i), Path: path, Privs: []string{"SDN.Use"},
			Role: "ProxmoxTalosNetwork", Why: "to attach net" + strconv.Itoa(i) + " to bridge " + n.Bridge})
	}
	if a.Node != "" {
		needs = append(needs, need{Input: "node", Path: "/nodes/" + a.Node, Privs: []string{"Sys.Audit"}, Role: "ProxmoxTalosNode",
			Why: "to read the node's memory and the tasks that hold a VM's lock"})
	}
	if pool != "" {
		needs = append(needs, need{Input: "pool", Path: "/pool/" + pool, Privs: []string{"Pool.Allocate", "Pool.Audit"},
			Role: "PVEPoolAdmin", Why: "to check the pool and put the VM in it"})
	}
	if c := a.Clone; c != nil && u.known("clone.vmId") {
		needs = append(needs, need{Input: "clone.vmId", Path: fmt.Sprintf("/vms/%d", c.VMID), Privs: []string{"VM.Audit", "VM.Clone"},
			Role: "ProxmoxTalosVM", Why: "to read and clone the source VM"})
		// clone_vm: Datastore.AllocateSpace where each disk of the source
		// goes (linked clones too), SDN.Use on the source's bridges
		full := c.Full == nil || *c.Full
		for _, k := range slices.Sorted(maps.Keys(source)) {
			switch {
			case diskInterfaceRE.MatchString(k) || k == efiDiskKey:
				if p := privilegeOf(k, source[k]); len(p) != 1 || p[0] != "VM.Config.Disk" {
					continue // CD drives and cloud-init drives need no space
				}
				sid, _, _ := strings.Cut(pve.ParsePropString(source[k]).Value("file"), ":")
				if full && c.Storage != nil && *c.Storage != "" {
					sid = *c.Storage
				}
				space("clone.vmId", sid, "to copy the source's disk "+k)
			case strings.HasPrefix(k, "net"):
				if br := pve.ParsePropString(source[k]).Value("bridge"); br != "" {
					needs = append(needs, need{Input: "clone.vmId", Path: "/sdn/zones/localnetwork/" + br, Privs: []string{"SDN.Use"},
						Role: "ProxmoxTalosNetwork", Why: "to attach the clone's " + k + " to bridge " + br})
				}
			}
		}
	}
	return needs
}

// downloadNeeds are the privileges of a DownloadFile: download-url
// (Datastore.AllocateTemplate on the storage, and Sys.AccessNetwork on the
// node or Sys.Audit and Sys.Modify on /), listing the storage and deleting
// the file on destroy (Datastore.Allocate).
func downloadNeeds(node, storage string) []need {
	return []need{
		{Input: "storage", Path: "/storage/" + storage, Privs: []string{"Datastore.Allocate", "Datastore.AllocateTemplate", "Datastore.Audit"},
			Role: "ProxmoxTalosImage", Why: "to download the file, list the storage and delete the file on destroy"},
		{Input: "node", Path: "/nodes/" + node, Privs: []string{"Sys.AccessNetwork"}, Role: "ProxmoxTalosNode",
			Why: "to let the node download from a URL",
			Or:  &need{Path: "/", Privs: []string{"Sys.Audit", "Sys.Modify"}}},
	}
}

func inputOfKeys(keys []string) string {
	for _, k := range keys {
		switch {
		case k == "disks" || strings.HasPrefix(k, "scsi") || strings.HasPrefix(k, "virtio") || strings.HasPrefix(k, "sata"):
			return "disks"
		case k == "iso":
			return "iso"
		case k == "cloudInit":
			return "cloudInit"
		case k == "cores" || k == "sockets" || k == "cpu":
			return "cpu"
		case k == "memory" || k == "balloon":
			return "memory"
		case strings.HasPrefix(k, "net"):
			return "networkDevices"
		case k == "agent":
			return "agent"
		}
	}
	return ""
}

// holds reports whether privileges (what Proxmox answered for n.Path)
// satisfy n, apart from n.Or.
func (n need) holds(privileges map[string]bool) bool {
	found := 0
	for _, p := range n.Privs {
		propagate, ok := privileges[p]
		if ok && (!n.Inherit || propagate) {
			found++
		}
	}
	if n.Any {
		return found > 0
	}
	return found == len(n.Privs)
}

// missing lists the privileges of n that privileges lacks.
func (n need) missing(privileges map[string]bool) []string {
	var out []string
	for _, p := range n.Privs {
		if propagate, ok := privileges[p]; !ok || (n.Inherit && !propagate) {
			out = append(out, p)
		}
	}
	return out
}

// RecipeRole is one role of the README's least-privilege recipe.
type RecipeRole = recipeRole

// RecipeRoles are the roles of the README's least-privilege recipe.
func RecipeRoles() []RecipeRole { return recipeRoles }
