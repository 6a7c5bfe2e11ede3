package plan

import (
	"fmt"
	"strings"
)

// noReplace explains why an existing node's VM is never replaced: Pulumi
// creates a replacement before it deletes the old VM, so the new VM would
// boot with the node's name, MAC and address next to the running one, and
// nothing would reset the old node or install the new one; and a bus change
// applied in place would detach the OS disk.
const noReplace = "an existing node keeps its VM (a new one would start next to the running node, with its name and address, and would not be installed); " +
	"remove the node (scale its pool down, or drop it from the list) and add a new one in a later update, or keep the setting while the node exists"

// checkReplacements refuses changes that only a new VM could apply to an
// existing node: the OS disk's bus, a pinned VM id, and the boot source
// switching between a Talos ISO and a template. Host and address moves are
// refused by placement and addressing. A new template (image.template,
// hosts[].templateVmId) is no such change: like a new Talos ISO, it is
// what new nodes are created from, and existing nodes keep their VM (the
// component does not pass a clone source change on to existing VMs).
func (b *builder) checkReplacements() {
	var bus, toTemplate, toISO []string
	for _, s := range b.slots {
		p := s.prev
		if p == nil || p.Power == PowerUnknown {
			continue // a VM whose configuration is not known shows no change
		}
		if p.DiskInterface != "" && b.diskBus != "" && p.DiskInterface != b.diskBus+"0" {
			bus = append(bus, s.name)
		}
		if v := s.explicit.VMID; v != 0 && p.VMID != 0 && v != p.VMID {
			b.probs.add(s.field+".vmId", "node %s is VM %d and would become VM %d: %s", s.name, p.VMID, v, noReplace)
		}
		switch {
		case b.spec.Image.Template != nil && strings.HasPrefix(p.Boot, "iso:"):
			toTemplate = append(toTemplate, s.name)
		case b.spec.Image.Template == nil && (p.Boot == "" || strings.HasPrefix(p.Boot, "clone:")):
			toISO = append(toISO, s.name)
		}
	}
	if len(bus) > 0 {
		b.probs.add("diskInterface", "the OS disk of %s is on the %s bus and would move to %s (Proxmox would detach the disk the node runs from): %s",
			nodeList(bus), strings.TrimRight(b.prev.node(bus[0]).DiskInterface, "0123456789"), b.diskBus, noReplace)
	}
	if len(toTemplate) > 0 {
		b.probs.add("image.template", "%s booted the Talos ISO and would be cloned from a template instead: %s", nodeList(toTemplate), noReplace)
	}
	if len(toISO) > 0 {
		b.probs.add("image.template", "%s was cloned from a template (its VM has no Talos ISO) and would boot the ISO instead: %s", nodeList(toISO), noReplace)
	}
}

// nodeList names nodes for an error: "node a" or "nodes a, b".
func nodeList(names []string) string {
	if len(names) == 1 {
		return "node " + names[0]
	}
	return fmt.Sprintf("nodes %s", strings.Join(names, ", "))
}
