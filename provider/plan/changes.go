package plan

import (
	"cmp"
	"fmt"
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
)

var actionNames = map[Action]string{
	ActionNone: "unchanged", ActionUpdate: "updated in place", ActionReboot: "rebooted",
	ActionUpgrade: "upgraded", ActionReplace: "replaced", ActionAdd: "added", ActionRemove: "removed",
}

func (a Action) String() string { return actionNames[a] }

// NodeChange is what an update does to one node.
type NodeChange struct {
	Name   string
	Role   Role
	Action Action
	// Reasons say why, one short phrase each ("memoryMiB 4096 -> 8192").
	Reasons []string
	// ConfigChanged names the machine configuration inputs that change.
	ConfigChanged []string
}

// Summary is the day-two view of an update, for the component's preview.
type Summary struct {
	// Nodes that change: control planes, then workers; within a role,
	// changed and added nodes in rollout order, then removed ones.
	Nodes []NodeChange
	// KubernetesUpgrade is "v1.33.1 -> v1.34.1" when Kubernetes is upgraded.
	KubernetesUpgrade string
	// TalosUpgrade is "v1.12.4 -> v1.12.5" when the Talos version changes.
	TalosUpgrade string
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
			s.TalosUpgrade = o.TalosVersion + " -> " + n.TalosVersion
		}
		if o.KubernetesVersion != n.KubernetesVersion && o.KubernetesVersion != "" && s.KubernetesUpgrade == "" {
			s.KubernetesUpgrade = o.KubernetesVersion + " -> " + n.KubernetesVersion
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
	// Control planes first, keeping each role's order.
	slices.SortStableFunc(s.Nodes, func(a, b NodeChange) int {
		if a.Role == b.Role {
			return 0
		}
		if a.Role == RoleControlPlane {
			return -1
		}
		return 1
	})
	return s
}

// compareNode classifies one node present in both states. A field the old
// state does not know (empty: a state rebuilt from Proxmox cannot know the
// clone source or the machine configuration inputs) is not a change.
func compareNode(o, n *NodeState) NodeChange {
	c := NodeChange{Name: n.Name, Role: n.Role}
	raise := func(a Action, format string, args ...any) {
		c.Action = max(c.Action, a)
		c.Reasons = append(c.Reasons, fmt.Sprintf(format, args...))
	}
	changedS := func(field, a, b string, act Action) {
		if a != "" && a != b {
			raise(act, "%s %s -> %s", field, a, orDash(b))
		}
	}
	changedI := func(field string, a, b int, act Action) {
		if a != 0 && a != b {
			raise(act, "%s %d -> %d", field, a, b)
		}
	}

	// What the VM cannot change in place.
	changedS("host", o.Host, n.Host, ActionReplace)
	changedS("address", o.Address, n.Address, ActionReplace)
	changedS("osDisk", o.DiskInterface, n.DiskInterface, ActionReplace)
	if n.VMID != 0 {
		changedI("vmId", o.VMID, n.VMID, ActionReplace)
	}
	if o.Boot != "" && o.Boot != n.Boot {
		// A new clone source means a new VM; a different ISO storage only
		// matters for the cdrom of an installed node.
		act := ActionUpdate
		if strings.HasPrefix(o.Boot, "clone:") || strings.HasPrefix(n.Boot, "clone:") {
			act = ActionReplace
		}
		changedS("boot", o.Boot, n.Boot, act)
	}

	// Talos and Kubernetes versions.
	changedS("talosVersion", o.TalosVersion, n.TalosVersion, ActionUpgrade)
	if o.Image != "" && o.Image != n.Image {
		raise(ActionUpgrade, "image schematic (extensions or kernel args) %s -> %s", o.Image, n.Image)
	}
	changedS("kubernetesVersion", o.KubernetesVersion, n.KubernetesVersion, ActionUpdate)

	// CPU and memory changes take effect when the VM restarts (Proxmox
	// hotplugs only network, disk and usb by default); cloud-init is read by
	// Talos at boot.
	changedI("cores", o.Cores, n.Cores, ActionReboot)
	changedI("sockets", o.Sockets, n.Sockets, ActionReboot)
	changedS("cpuType", o.CPUType, n.CPUType, ActionReboot)
	changedI("memoryMiB", o.MemoryMiB, n.MemoryMiB, ActionReboot)
	if o.SecondaryAddress != n.SecondaryAddress {
		raise(ActionReboot, "secondaryAddress %s -> %s", orDash(o.SecondaryAddress), orDash(n.SecondaryAddress))
	}
	if o.CloudInit != "" && o.CloudInit != n.CloudInit && o.Address == n.Address && o.SecondaryAddress == n.SecondaryAddress {
		raise(ActionReboot, "network settings (gateway, DNS) change")
	}
	if o.NICs != "" && o.NICs != n.NICs {
		raise(ActionUpdate, "network devices change")
	}
	changedI("diskGiB", o.DiskGiB, n.DiskGiB, ActionUpdate)
	if !slices.Equal(o.DataDisks, n.DataDisks) {
		raise(ActionUpdate, "data disks %s -> %s", orDash(strings.Join(o.DataDisks, ",")), orDash(strings.Join(n.DataDisks, ",")))
	}

	if o.Config != nil {
		for _, k := range sortedKeys(n.Config) {
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// MarkReboot records that a node's configuration change needs a reboot
// (Talos' own verdict on the real configurations).
func (s *Summary) MarkReboot(node, reason string) {
	for i := range s.Nodes {
		c := &s.Nodes[i]
		if c.Name == node && c.Action < ActionReboot {
			c.Action = ActionReboot
			c.Reasons = append(c.Reasons, reason)
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
			c.Action = max(c.Action, a)
			c.Reasons = append(c.Reasons, reason)
			return
		}
	}
	s.Nodes = append(s.Nodes, NodeChange{Name: node, Role: role, Action: a, Reasons: []string{reason}})
	slices.SortStableFunc(s.Nodes, func(a, b NodeChange) int {
		switch {
		case a.Role == b.Role:
			return 0
		case a.Role == RoleControlPlane:
			return -1
		}
		return 1
	})
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

// String is the ten-second summary, e.g. "1 added (c-workers-3); 3
// upgraded, Talos v1.12.4 -> v1.12.5 (c-cp-1, c-cp-2, c-cp-3), one at a
// time; 2 rebooted (...)".
func (s Summary) String() string {
	var parts []string
	for _, a := range []Action{ActionAdd, ActionRemove, ActionReplace, ActionUpgrade, ActionReboot, ActionUpdate} {
		names := s.Names(a)
		if len(names) == 0 {
			continue
		}
		p := fmt.Sprintf("%d %s", len(names), a)
		if a == ActionUpgrade && s.TalosUpgrade != "" {
			p += ", Talos " + s.TalosUpgrade
		}
		p += " (" + strings.Join(names, ", ") + ")"
		if a == ActionUpgrade || a == ActionReboot || a == ActionReplace {
			if len(names) > 1 {
				p += ", one at a time"
			}
		}
		parts = append(parts, p)
	}
	if s.KubernetesUpgrade != "" {
		parts = append(parts, "Kubernetes "+s.KubernetesUpgrade)
	}
	if len(parts) == 0 {
		return "no node changes"
	}
	return strings.Join(parts, "; ")
}
