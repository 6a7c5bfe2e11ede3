package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// checkHostResources checks the storages and bridges the new VMs name
// against what each host has, so that a missing one fails the preview
// against the component input it came from (hosts[0].diskStorage,
// network.bridge) rather than inside a child VirtualMachine, whose
// message names its own property (disks[0].storage). Existing VMs are not
// checked: they exist, and their settings are what the host had. A host
// whose facts do not list storages or bridges (offline, or an inventory
// that does not read them) is not checked.
func (b *builder) checkHostResources() {
	reported := map[string]bool{}
	add := func(field, format string, args ...any) {
		if !reported[field] {
			reported[field] = true
			b.probs.add(field, format, args...)
		}
	}
	hostIndex := map[string]int{}
	for i, h := range b.spec.Hosts {
		hostIndex[h.Node] = i
	}
	for i := range b.plan.Nodes {
		n := &b.plan.Nodes[i]
		if n.Existing {
			continue
		}
		hf, ok := b.facts.Hosts[n.VM.Host]
		hi, listed := hostIndex[n.VM.Host]
		if !ok || !listed {
			continue
		}
		h := b.spec.Hosts[hi]
		diskField := idx("hosts", hi) + ".diskStorage"
		hf.checkStorage(add, diskField, h.DiskStorage == "", n.VM.OSDisk.Storage, "images", n.VM.Host)
		for k, d := range n.VM.DataDisks {
			field, isDefault := b.dataDiskField(n.Pool, k), false
			if field == "" {
				field, isDefault = diskField, h.DiskStorage == ""
			}
			hf.checkStorage(add, field, isDefault, d.Storage, "images", n.VM.Host)
		}
		if n.VM.Boot.ISOFile != "" {
			field := idx("hosts", hi) + ".isoStorage"
			if h.ISOStorage == "" && b.spec.Image.ISOStorage != "" {
				field = "image.isoStorage"
			}
			hf.checkStorage(add, field, h.ISOStorage == "" && b.spec.Image.ISOStorage == "", n.VM.Boot.ISOStorage, "iso", n.VM.Host)
		}
		for k, nic := range n.VM.NICs {
			field := "network.bridge"
			if k == 1 {
				field = "network.secondary.bridge"
			}
			if hf.Bridges != nil && !slices.Contains(hf.Bridges, nic.Bridge) {
				add(field, "bridge %q%s does not exist on Proxmox node %s; its bridges are: %s. Name one of them, "+
					"or create the bridge on the node", nic.Bridge, defaulted(field == "network.bridge" && b.spec.Network.Bridge == ""),
					n.VM.Host, listOrNone(hf.Bridges))
			}
		}
	}
}

// checkStorage: the storage exists on the host and holds the content.
func (hf HostFacts) checkStorage(add func(string, string, ...any), field string, isDefault bool, storage, content, host string) {
	if hf.Storages == nil {
		return
	}
	what := map[string]string{"images": "VM disks", "iso": "ISO images"}[content]
	kinds, ok := hf.Storages[storage]
	switch {
	case !ok:
		add(field, "storage %q%s is not on Proxmox node %s; its storages are: %s. Name one that holds %s",
			storage, defaulted(isDefault), host, listOrNone(slices.Sorted(maps.Keys(hf.Storages))), what)
	case !slices.Contains(kinds, content):
		add(field, "storage %q on Proxmox node %s does not hold %s (content %s, it holds %s): name another storage, "+
			"or add the content type to it", storage, host, what, content, strings.Join(kinds, ", "))
	}
}

// dataDiskField is the input of data disk k of pool's nodes when the pool
// names its storage, "" when the disk is on the host's disk storage.
func (b *builder) dataDiskField(pool string, k int) string {
	for p, wp := range b.spec.WorkerPools {
		if wp.Name == pool && k < len(wp.DataDisks) && wp.DataDisks[k].Storage != "" {
			return fmt.Sprintf("workerPools[%d].dataDisks[%d].storage", p, k)
		}
	}
	return ""
}

func defaulted(isDefault bool) string {
	if isDefault {
		return " (the default)"
	}
	return ""
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
