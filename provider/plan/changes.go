package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Action is what happens to a node in an update, from least to most
// disruptive.
type Action int

// Actions, ordered by disruption.
const (
	ActionNone    Action = iota
	ActionUpdate         // applied in place, no reboot
	ActionReboot         // the node reboots (VM restart or a config Talos applies with a reboot)
	ActionUpgrade        // Talos upgrade through the Upgrade API (reboots, keeps the VM)
	ActionReplace        // a new VM replaces the old one
	ActionAdd
	ActionRemove
	// ActionRecreate: the node's VM was deleted outside Pulumi; a new one
	// takes its place and the node rejoins.
	ActionRecreate
)

var actionNames = map[Action]string{
	ActionNone: "unchanged", ActionUpdate: "updated in place", ActionReboot: "rebooted",
	ActionUpgrade: "upgraded", ActionReplace: "replaced", ActionAdd: "added", ActionRemove: "removed",
	ActionRecreate: "created again",
}

func (a Action) String() string { return actionNames[a] }

// NodeChange is what an update does to one node.
type NodeChange struct {
	Name   string
	Role   Role
	Action Action
	// Reasons say why, one short phrase each ("memory 4096 → 8192 MiB").
	Reasons []string
	// Why are the reasons for Action itself (the most disruptive).
	Why []string
	// ConfigChanged names the machine configuration inputs that change.
	ConfigChanged []string
	// VM are the reasons that change the running VM in place, without a
	// restart (tags, onBoot, disks moved to another storage).
	VM []string
	// Moved: the VM's disks move to another storage, live; the node's
	// health gate then checks the cluster before the next node's VM moves.
	Moved bool
	// DisksChanged: data disks are added, removed or grown while the VM
	// runs; the node's health gate checks the cluster after it too.
	DisksChanged bool
	// Grown: the OS disk grows while the VM runs (diskSize), gated too.
	Grown bool
	// GateKeys are the healthGate.vm keys (cluster vmSettings) whose change
	// alone gates this node's disk change: "diskSize", "diskStorage",
	// "dataDisks".
	GateKeys []string
	// Unchecked: a gate stored without one of GateKeys (by an older
	// provider, no pulumi up since) does not see the change, so no health
	// check follows it (set by the component, which reads the stack's state).
	Unchecked bool
}

// liveVMChanges records what changes on the running VM, no restart.
func (c *NodeChange) liveVMChanges(o, n *NodeState) {
	// The VM's update grows the OS disk while it runs (qemu-server
	// resize); the node's health gate checks the cluster after it
	// (healthGate.vm diskSize=). A smaller size is refused (build).
	if o.DiskGiB != 0 && o.DiskGiB != n.DiskGiB {
		c.Grown = true
		c.vm(fmt.Sprintf("diskSize %d → %d GiB", o.DiskGiB, n.DiskGiB))
	}
	// The VM's update moves the OS disk (and re-creates the cloud-init
	// drive) on the new storage while it runs, a clone's too (its create
	// moved it there from the source's storage: proxmox planDisks). The
	// node's health gate checks the cluster after the move (healthGate.vm).
	if o.DiskStorage != "" && o.DiskStorage != n.DiskStorage {
		c.Moved = true
		c.vm(fmt.Sprintf("diskStorage %s → %s", o.DiskStorage, orDash(n.DiskStorage)))
	}
	// Applied to the running VM at once, no restart: both are in
	// qemu-server's $fast_plug_option (PVE/QemuServer.pm).
	if o.Tags != "" && o.Tags != n.Tags {
		c.vm("tags " + tagDelta(o.Tags, n.Tags))
	}
	if o.OnBoot != nil && n.OnBoot != nil && *o.OnBoot != *n.OnBoot {
		c.vm(fmt.Sprintf("onBoot %t → %t", *o.OnBoot, *n.OnBoot))
	}
	// Data disks the bus hot-plugs, grown or moved to another storage on
	// any bus: live too (a restart otherwise: restartReasons). The
	// node's gate follows them (healthGate.vm dataDisks=).
	if !slices.Equal(o.DataDisks, n.DataDisks) && !dataDisksRestart(o, n) {
		if sameDiskSlots(o.DataDisks, n.DataDisks, true) {
			c.Moved = true
		} else {
			c.DisksChanged = true
		}
		c.vm(dataDisksReason(o, n))
	}
}

func dataDisksReason(o, n *NodeState) string {
	return fmt.Sprintf("data disks %s → %s", orDash(strings.Join(o.DataDisks, ",")), orDash(strings.Join(n.DataDisks, ",")))
}

// dataDisksRestart reports data disks added or removed on a bus that
// Proxmox does not hot-plug: qemu-server (PVE/QemuServer.pm
// vmconfig_update_disk) hot-plugs only scsi and virtio disks, so a sata
// or ide disk's add or removal stays pending until the VM restarts, which
// the VM's update then does (proxmox applyPending).
func dataDisksRestart(o, n *NodeState) bool {
	bus := strings.TrimRight(n.DiskInterface, "0123456789")
	return (bus == "sata" || bus == "ide") && !sameDiskSlots(o.DataDisks, n.DataDisks, false)
}

// sameDiskSlots reports the same data disk interfaces in a and b
// ("sata1:8:local-lvm" entries, dataDiskKey), and with sized, the same
// sizes too.
func sameDiskSlots(a, b []string, sized bool) bool {
	slot := func(k string) string {
		iface, rest, _ := strings.Cut(k, ":")
		size, _, _ := strings.Cut(rest, ":")
		if sized {
			return iface + ":" + size
		}
		return iface
	}
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i, k := range a {
		as[i] = slot(k)
	}
	for i, k := range b {
		bs[i] = slot(k)
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

// vm records an in-place change of the running VM.
func (c *NodeChange) vm(reason string) {
	c.VM = append(c.VM, reason)
	c.raise(ActionUpdate, reason)
}

// tagDelta says which tags a change adds and removes ("+prod -dev"), from
// two TagLists.
func tagDelta(from, to string) string {
	a, b := strings.Split(from, ";"), strings.Split(to, ";")
	var out []string
	for _, t := range b {
		if t != "" && !slices.Contains(a, t) {
			out = append(out, "+"+t)
		}
	}
	for _, t := range a {
		if t != "" && !slices.Contains(b, t) {
			out = append(out, "-"+t)
		}
	}
	return strings.Join(out, " ")
}

// Summary is the day-two view of an update, for the component's preview.
type Summary struct {
	// Nodes that change: control planes, then workers; within a role,
	// changed and added nodes in rollout order, then removed ones.
	Nodes []NodeChange
	// KubernetesUpgrade is "v1.33.1 → v1.34.1" when Kubernetes is upgraded.
	KubernetesUpgrade string
	// TalosUpgrade is "v1.12.4 → v1.12.5" when the Talos version changes.
	TalosUpgrade string
	// Total is the number of nodes after the update.
	Total int
	// Started are the existing nodes whose VM does not run (stopped outside
	// Pulumi, a start that failed, a host that restarted): the update
	// starts them first. Resumed are those whose VM is paused: the update
	// resumes them first. Unknown are those whose Proxmox node is offline.
	Started, Resumed, Unknown []string
	// Quorum says what etcd has while control planes are down (Plan.Quorum).
	Quorum string
	// Bringup says how a new cluster comes up (Plan.NewCluster); "" for a
	// cluster that exists, whose changes roll one healthy node at a time.
	Bringup string
}

// Compare says what changes from the old state to the new one. old may be
// nil (a new cluster); so may next (the cluster is destroyed). Machine configuration changes are reported as
// updates in place; the component refines them with MarkReboot once Talos'
// own rules have classified the real configurations.
func Compare(old, next *State) Summary {
	var s Summary
	if next == nil {
		next = &State{}
	}
	s.Total = len(next.Nodes)
	for _, n := range next.Nodes {
		o := old.node(n.Name)
		if o == nil {
			s.Nodes = append(s.Nodes, NodeChange{Name: n.Name, Role: n.Role, Action: ActionAdd})
			continue
		}
		if c := compareNode(o, &n); c.Action != ActionNone {
			s.Nodes = append(s.Nodes, c)
		}
		if o.TalosVersion != n.TalosVersion && o.TalosVersion != "" && s.TalosUpgrade == "" {
			s.TalosUpgrade = o.TalosVersion + " → " + n.TalosVersion
		}
		if o.KubernetesVersion != n.KubernetesVersion && o.KubernetesVersion != "" && s.KubernetesUpgrade == "" {
			s.KubernetesUpgrade = o.KubernetesVersion + " → " + n.KubernetesVersion
		}
	}
	if old != nil {
		// In plan order (pool, then ordinal), not in the order of the old
		// state, which a rebuilt state sorts by VMID: VMIDs follow the
		// order parallel creates reached Proxmox.
		var gone []NodeState
		for _, o := range old.Nodes {
			if next.node(o.Name) == nil {
				gone = append(gone, o)
			}
		}
		slices.SortStableFunc(gone, func(a, b NodeState) int {
			return cmp.Or(strings.Compare(a.Pool, b.Pool), a.Ordinal-b.Ordinal)
		})
		for _, o := range gone {
			s.Nodes = append(s.Nodes, NodeChange{Name: o.Name, Role: o.Role, Action: ActionRemove})
		}
	}
	slices.SortStableFunc(s.Nodes, controlPlanesFirst)
	return s
}

// controlPlanesFirst orders control planes before workers, keeping each
// role's order in a stable sort.
func controlPlanesFirst(a, b NodeChange) int {
	switch a.Role {
	case b.Role:
		return 0
	case RoleControlPlane:
		return -1
	}
	return 1
}

// compareNode classifies one node present in both states. A field the old
// state does not know (empty: a state rebuilt from Proxmox cannot know the
// clone source or the machine configuration inputs) is not a change.
func compareNode(o, n *NodeState) NodeChange {
	c := NodeChange{Name: n.Name, Role: n.Role}
	raise := func(a Action, format string, args ...any) {
		c.raise(a, fmt.Sprintf(format, args...))
	}
	changedS := func(field, a, b string, act Action) {
		if a != "" && a != b {
			raise(act, "%s %s → %s", field, a, orDash(b))
		}
	}
	changedI := func(field string, a, b int, act Action) {
		if a != 0 && a != b {
			raise(act, "%s %d → %d", field, a, b)
		}
	}

	// What the VM cannot change in place.
	changedS("host", o.Host, n.Host, ActionReplace)
	changedS("address", o.Address, n.Address, ActionReplace)
	changedS("osDisk", o.DiskInterface, n.DiskInterface, ActionReplace)
	if n.VMID != 0 {
		changedI("vmId", o.VMID, n.VMID, ActionReplace)
	}
	if o.Boot != "" && o.Boot != n.Boot && !(strings.HasPrefix(o.Boot, "clone:") && strings.HasPrefix(n.Boot, "clone:")) {
		// A switch between ISO and template means a new VM (Compute
		// refuses it); a different ISO storage only matters for the cdrom
		// of an installed node. A new template is for new nodes only.
		act := ActionUpdate
		if strings.HasPrefix(o.Boot, "clone:") || strings.HasPrefix(n.Boot, "clone:") {
			act = ActionReplace
		}
		// The clone source's host is each VM's own: not worth a reason per host.
		changedS("boot", strings.Split(o.Boot, "@")[0], strings.Split(n.Boot, "@")[0], act)
	}

	// Talos and Kubernetes versions.
	changedS("talosVersion", o.TalosVersion, n.TalosVersion, ActionUpgrade)
	if o.Image != "" && o.Image != n.Image {
		raise(ActionUpgrade, "image schematic (extensions or kernel args) %s -> %s", o.Image, n.Image)
	}
	changedS("kubernetesVersion", o.KubernetesVersion, n.KubernetesVersion, ActionUpdate)

	for _, r := range restartReasons(o, n) {
		raise(ActionReboot, "%s", r)
	}
	if o.NICs != "" && o.NICs != n.NICs {
		raise(ActionUpdate, "network devices change")
	}
	c.liveVMChanges(o, n)
	if o.DiskGiB != 0 && o.DiskGiB != n.DiskGiB {
		c.GateKeys = append(c.GateKeys, "diskSize")
	}
	if o.DiskStorage != "" && o.DiskStorage != n.DiskStorage {
		c.GateKeys = append(c.GateKeys, "diskStorage")
	}
	if !slices.Equal(o.DataDisks, n.DataDisks) {
		c.GateKeys = append(c.GateKeys, "dataDisks")
	}

	if o.Config != nil {
		for _, k := range slices.Sorted(maps.Keys(n.Config)) {
			if o.Config[k] != n.Config[k] {
				c.ConfigChanged = append(c.ConfigChanged, k)
			}
		}
	}
	if len(c.ConfigChanged) > 0 {
		raise(ActionUpdate, "machine config: %s", strings.Join(c.ConfigChanged, ", "))
	}
	return c
}

// restartReasons are the changes of a node that restart its VM. CPU and
// memory changes take effect when the VM restarts (Proxmox hotplugs only
// network, disk and usb by default); cloud-init is read by Talos at boot.
func restartReasons(o, n *NodeState) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if o.Cores != 0 && o.Cores != n.Cores {
		add("cores %d → %d", o.Cores, n.Cores)
	}
	if o.Sockets != 0 && o.Sockets != n.Sockets {
		add("sockets %d → %d", o.Sockets, n.Sockets)
	}
	if o.CPUType != "" && o.CPUType != n.CPUType {
		add("cpuType %s → %s", o.CPUType, orDash(n.CPUType))
	}
	if o.MemoryMiB != 0 && o.MemoryMiB != n.MemoryMiB {
		add("memory %d → %d MiB", o.MemoryMiB, n.MemoryMiB)
	}
	if o.SecondaryAddress != n.SecondaryAddress {
		add("secondaryAddress %s → %s", orDash(o.SecondaryAddress), orDash(n.SecondaryAddress))
	}
	if o.CloudInit != "" && o.CloudInit != n.CloudInit && o.Address == n.Address && o.SecondaryAddress == n.SecondaryAddress {
		add("network settings (gateway, DNS) change")
	}
	// agent is neither a fast-plug option nor hot-plugged (qemu-server
	// PVE/QemuServer.pm vmconfig_hotplug_pending skips it): it stays
	// pending until the restart the VM's update does.
	if o.Agent != nil && n.Agent != nil && *o.Agent != *n.Agent {
		add("guest agent %s → %s", onOff(*o.Agent), onOff(*n.Agent))
	}
	if dataDisksRestart(o, n) {
		add("%s (a %s disk is added or removed only at a restart)", dataDisksReason(o, n), strings.TrimRight(n.DiskInterface, "0123456789"))
	}
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// raise records a reason for action a: the node's action becomes the more
// disruptive of the two, and Why keeps the reasons of that action.
func (c *NodeChange) raise(a Action, reason string) {
	c.Reasons = append(c.Reasons, reason)
	switch {
	case a > c.Action:
		c.Action, c.Why = a, []string{reason}
	case a == c.Action:
		c.Why = append(c.Why, reason)
	}
}

// MarkReboot records that a node's configuration change needs a reboot
// (Talos' own verdict on the real configurations).
func (s *Summary) MarkReboot(node, reason string) {
	for i := range s.Nodes {
		c := &s.Nodes[i]
		if c.Name == node && c.Action < ActionReboot {
			c.raise(ActionReboot, reason)
		}
	}
}

// Mark records what a machine configuration change does to a node that
// Compare could not see change (a state rebuilt from Proxmox holds no
// configuration inputs): a, for reason. A node already listed keeps the
// more disruptive action; one not listed is added in rollout position
// (control planes first, existing order kept).
func (s *Summary) Mark(node string, role Role, a Action, reason string) {
	for i := range s.Nodes {
		c := &s.Nodes[i]
		if c.Name == node {
			c.raise(a, reason)
			return
		}
	}
	s.Nodes = append(s.Nodes, NodeChange{Name: node, Role: role, Action: a, Reasons: []string{reason}, Why: []string{reason}})
	slices.SortStableFunc(s.Nodes, controlPlanesFirst)
}

// Names lists the nodes with an action, in summary order.
func (s Summary) Names(a Action) []string {
	var out []string
	for _, c := range s.Nodes {
		if c.Action == a {
			out = append(out, c.Name)
		}
	}
	return out
}
