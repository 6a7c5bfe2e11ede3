package plan

import "slices"

// Guest is a VM or container on the Proxmox cluster, as the cluster
// resources list shows it.
type Guest struct {
	// Kind is "VM" or "container" (qemu or lxc).
	Kind     string
	Name     string
	Node     string
	Template bool
	Tags     []string
}

// checkVMIDs checks the VMIDs the new VMs name against the Proxmox
// cluster's guests, so that a pinned VMID that is taken, or a template
// that does not exist, fails the preview against the component input it
// came from (controlPlane.nodes[0].vmId, image.template.vmId) rather than
// inside a child VirtualMachine, whose message names its own property
// (vmId, clone.vmId). The VirtualMachine's own checks stay (they also see
// what changed since). Not checked without the guests (Facts.Guests nil).
func (b *builder) checkVMIDs() {
	guests := b.facts.Guests
	if guests == nil {
		return
	}
	fields := map[string]string{}
	for _, s := range b.slots {
		fields[s.name] = s.field
	}
	reported := map[string]bool{}
	add := func(field, format string, args ...any) {
		if !reported[field] {
			reported[field] = true
			b.probs.add(field, format, args...)
		}
	}
	for i := range b.plan.Nodes {
		n := &b.plan.Nodes[i]
		if n.Existing {
			continue
		}
		if n.VM.VMIDPinned {
			// A VM of this cluster with the id is this node's, left by an
			// interrupted create: the VirtualMachine takes it over.
			if g, taken := guests[n.VM.VMID]; taken && !slices.Contains(g.Tags, TagClusterPrefix+b.spec.Name) {
				add(fields[n.Name]+".vmId", "VMID %d is taken by %s %q on Proxmox node %s (VMIDs are unique across "+
					"the Proxmox cluster, VMs and containers alike): give a free VMID, or leave vmId out and one is "+
					"allocated safely", n.VM.VMID, g.Kind, g.Name, g.Node)
			}
		}
		if id := n.VM.Boot.CloneVMID; id != 0 {
			b.checkTemplate(add, n, guests)
		}
	}
}

// checkTemplate: the template a new VM is cloned from exists, is a VM, is
// on the node it is cloned from, and is a template if the clone is linked
// (Proxmox makes linked clones of templates only).
func (b *builder) checkTemplate(add func(string, string, ...any), n *Node, guests map[int]Guest) {
	boot := n.VM.Boot
	field, nodeField := "image.template.vmId", "image.template.node"
	for i, h := range b.spec.Hosts {
		if h.Node == n.VM.Host && h.TemplateVMID != 0 {
			field = idx("hosts", i) + ".templateVmId"
		}
	}
	g, ok := guests[boot.CloneVMID]
	switch {
	case !ok:
		add(field, "VMID %d does not exist on the Proxmox cluster: give the VMID of the template holding the Talos "+
			"nocloud disk image (`qm list` on the host), or leave image.template out to boot the Talos ISO", boot.CloneVMID)
	case g.Kind != "VM":
		add(field, "VMID %d is a %s (%q on node %s): the nodes are cloned from a VM template", boot.CloneVMID, g.Kind, g.Name, g.Node)
	case g.Node != boot.CloneNode:
		add(nodeField, "template %d is on Proxmox node %s, not %s%s: set image.template.node: %s (Proxmox clones to "+
			"another node only from shared storage), or give each host its own copy with hosts[].templateVmId",
			boot.CloneVMID, g.Node, boot.CloneNode, defaulted(b.spec.Image.Template == nil || b.spec.Image.Template.Node == ""),
			g.Node)
	case !boot.FullClone && !g.Template:
		add("image.template.fullClone", "a linked clone needs a template, and VM %d (%q on %s) is not one: convert it "+
			"(`qm template %d`) or leave fullClone out (full clones)", boot.CloneVMID, g.Name, g.Node, boot.CloneVMID)
	}
}
