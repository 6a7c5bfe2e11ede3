package proxmox

import (
	"slices"
	"sort"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
)

// replacePaths are the inputs Proxmox cannot change on an existing VM.
var replacePaths = []string{"node", "vmId", "clone", "efiDisk.preEnrolledKeys"}

func forcesReplace(path string) bool {
	for _, r := range replacePaths {
		if path == r || strings.HasPrefix(path, r+".") || strings.HasPrefix(path, r+"[") {
			return true
		}
	}
	return false
}

// diffVM compares the state with new inputs. It is exact: each changed input
// is reported once, as an in-place update or a replacement, and inputs that
// mean the same (tags in another order, a MAC in another case, an unset
// optional value Proxmox filled in) are not changes.
func diffVM(olds VirtualMachineState, news VirtualMachineArgs) p.DiffResponse {
	o, n := olds.VirtualMachineArgs, news
	// computed-if-unset inputs: compared with the actual value only when set
	o.VMID, o.SmbiosUUID = nil, nil
	if n.VMID != nil {
		o.VMID = ptr(olds.VMID)
	}
	if n.SmbiosUUID != nil {
		o.SmbiosUUID = ptr(strings.ToLower(olds.SmbiosUUID))
		n.SmbiosUUID = ptr(strings.ToLower(*n.SmbiosUUID))
	}
	if o.Tags != nil && n.Tags != nil &&
		strings.Join(normalizeTags(o.Tags), ";") == strings.Join(normalizeTags(n.Tags), ";") {
		n.Tags = o.Tags
	}
	o.NetworkDevices = slices.Clone(o.NetworkDevices)
	n.NetworkDevices = slices.Clone(n.NetworkDevices)
	for i := range n.NetworkDevices {
		if i >= len(o.NetworkDevices) {
			break
		}
		nm, om := n.NetworkDevices[i].MACAddress, o.NetworkDevices[i].MACAddress
		switch {
		case nm == nil:
			o.NetworkDevices[i].MACAddress = nil
		case om != nil && strings.EqualFold(*nm, *om):
			n.NetworkDevices[i].MACAddress = om
		}
	}
	if o.Clone == nil {
		// an imported VM: where it was cloned from cannot be known
		o.Clone = n.Clone
	}

	before, after := flatten(o), flatten(n)
	detailed := map[string]p.PropertyDiff{}
	replace := false
	record := func(path string, kind p.DiffKind) {
		if strings.HasPrefix(path, "tags") {
			path, kind = "tags", p.Update // a set: one entry for the whole list
		}
		if forcesReplace(path) {
			replace = true
			switch kind {
			case p.Add:
				kind = p.AddReplace
			case p.Delete:
				kind = p.DeleteReplace
			default:
				kind = p.UpdateReplace
			}
		}
		detailed[path] = p.PropertyDiff{Kind: kind, InputDiff: true}
	}
	for _, path := range unionKeys(before, after) {
		ov, inOld := before[path]
		nv, inNew := after[path]
		// an empty list on one side and elements on the other: the
		// elements are reported, not the list marker
		if (ov == "[]" && !inNew && hasUnder(after, path)) || (nv == "[]" && !inOld && hasUnder(before, path)) {
			continue
		}
		switch {
		case inOld && inNew && ov != nv:
			record(path, p.Update)
		case !inOld && inNew:
			record(collapse(path, before), p.Add)
		case inOld && !inNew:
			record(collapse(path, after), p.Delete)
		}
	}
	resp := p.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}
	// a replacement that keeps an explicit VMID must delete the old VM first:
	// Proxmox refuses a second VM with the same id
	if replace && news.VMID != nil && *news.VMID == olds.VMID {
		resp.DeleteBeforeReplace = true
	}
	return resp
}

// collapse reports an element that exists only on one side at its top: a new
// disk is "disks[1]", not each of its fields.
func collapse(path string, other map[string]string) string {
	for _, a := range ancestors(path) {
		if !hasUnder(other, a) {
			return a
		}
	}
	return path
}

func unionKeys(a, b map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}
