package proxmox

import (
	"maps"
	"reflect"
	"slices"
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
	o, n := comparableArgs(olds, news)

	// disks are compared by interface (diffDisks), not by list position
	oldDisks, newDisks := o.Disks, n.Disks
	o.Disks, n.Disks = nil, nil
	before, after := flatten(o), flatten(n)
	d := &vmDiff{before: before, detailed: map[string]p.PropertyDiff{}}
	diffFlat(before, after, d.record)
	diffDisks(oldDisks, newDisks, d.record)
	resp := p.DiffResponse{HasChanges: len(d.detailed) > 0, DetailedDiff: d.detailed}
	// a replacement that keeps an explicit VMID must delete the old VM first:
	// Proxmox refuses a second VM with the same id
	if d.replace && news.VMID != nil && *news.VMID == olds.VMID {
		resp.DeleteBeforeReplace = true
	}
	return resp
}

// comparableArgs brings the state's inputs and the new inputs to a form in
// which equal means "the same VM": defaults filled in, unset inputs taken
// from the state, computed-if-unset values, tags and MACs normalized.
func comparableArgs(olds VirtualMachineState, news VirtualMachineArgs) (o, n VirtualMachineArgs) {
	if news.Template == nil {
		// not managed: still what it was, which decides started's default
		news.Template = olds.Template
	}
	o, n = withDefaults(olds.VirtualMachineArgs), withDefaults(news)
	// an input that is not given is not managed, so it is not a change
	overlayUnset(reflect.ValueOf(&n).Elem(), reflect.ValueOf(o))
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
	o.NetworkDevices, n.NetworkDevices = comparableMACs(o.NetworkDevices, n.NetworkDevices)
	if o.Clone == nil {
		// an imported VM: where it was cloned from cannot be known
		o.Clone = n.Clone
	}
	o.Disks = slices.Clone(o.Disks)
	adoptImportSources(o.Disks, n.Disks)
	return o, n
}

// comparableMACs returns copies of both lists in which a MAC that is not
// given is not compared and MACs differing only in case are equal.
func comparableMACs(old, news []VirtualMachineNetworkDevice) (o, n []VirtualMachineNetworkDevice) {
	o, n = slices.Clone(old), slices.Clone(news)
	for i := range n {
		if i >= len(o) {
			break
		}
		nm, om := n[i].MACAddress, o[i].MACAddress
		switch {
		case nm == nil:
			o[i].MACAddress = nil
		case om != nil && strings.EqualFold(*nm, *om):
			n[i].MACAddress = om
		}
	}
	return o, n
}

// diffFlat reports each path of two flattened values that was added, removed
// or changed.
func diffFlat(before, after map[string]string, record func(string, p.DiffKind)) {
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
}

// vmDiff collects a VM's detailed diff, turning a change that Proxmox cannot
// make in place into a replacement.
type vmDiff struct {
	before   map[string]string
	detailed map[string]p.PropertyDiff
	replace  bool
}

func (d *vmDiff) record(path string, kind p.DiffKind) {
	if strings.HasPrefix(path, "tags") {
		path, kind = "tags", p.Update // a set: one entry for the whole list
	}
	// a template cannot turn back into a VM
	if forcesReplace(path) || (path == "template" && d.before[path] == "true") {
		d.replace = true
		switch kind {
		case p.Add:
			kind = p.AddReplace
		case p.Delete:
			kind = p.DeleteReplace
		default:
			kind = p.UpdateReplace
		}
	}
	d.detailed[path] = p.PropertyDiff{Kind: kind, InputDiff: true}
}

// withDefaults fills the inputs whose absence has a meaning of its own, so
// that "unset" and the default compare equal: started (true, false for a
// template), an agent block's enabled (true), a clone's full (true).
func withDefaults(a VirtualMachineArgs) VirtualMachineArgs {
	if a.Started == nil {
		a.Started = ptr(!isTemplate(a)) // a template never runs
	}
	if a.Agent != nil && a.Agent.Enabled == nil {
		g := *a.Agent
		g.Enabled = ptr(true)
		a.Agent = &g
	}
	if a.Clone != nil && a.Clone.Full == nil {
		c := *a.Clone
		c.Full = ptr(true)
		a.Clone = &c
	}
	return a
}

var ipAddressType = reflect.TypeFor[VirtualMachineIpAddress]()

// overlayUnset copies into n (addressable) every optional value that n
// leaves unset and o has, recursively, without changing o. List elements
// are matched by position, disks by interface. An IP
// address block is taken as a whole: its gateway is not optional on its own.
func overlayUnset(n, o reflect.Value) {
	switch n.Kind() {
	case reflect.Struct:
		if n.Type() == ipAddressType {
			return
		}
		for i := 0; i < n.NumField(); i++ {
			if n.Type().Field(i).IsExported() {
				overlayUnset(n.Field(i), o.Field(i))
			}
		}
	case reflect.Pointer:
		switch {
		case n.IsNil():
			n.Set(o)
		case !o.IsNil() && n.Elem().Kind() == reflect.Struct:
			cp := reflect.New(n.Elem().Type())
			cp.Elem().Set(n.Elem())
			overlayUnset(cp.Elem(), o.Elem())
			n.Set(cp)
		}
	case reflect.Slice:
		if n.IsNil() {
			n.Set(o)
			return
		}
		if n.Type().Elem().Kind() != reflect.Struct {
			return
		}
		cp := reflect.MakeSlice(n.Type(), n.Len(), n.Len())
		reflect.Copy(cp, n)
		for i := 0; i < n.Len(); i++ {
			if j := matchingElement(cp.Index(i), o, i); j >= 0 {
				overlayUnset(cp.Index(i), o.Index(j))
			}
		}
		n.Set(cp)
	}
}

// matchingElement is the index in o of the element that n (element i of
// its list) updates: the one on the same interface when elements have one,
// else the one at the same position; -1 when there is none.
func matchingElement(n, o reflect.Value, i int) int {
	f := n.FieldByName("Interface")
	if !f.IsValid() || f.Kind() != reflect.String {
		if i < o.Len() {
			return i
		}
		return -1
	}
	for j := 0; j < o.Len(); j++ {
		if o.Index(j).FieldByName("Interface").String() == f.String() {
			return j
		}
	}
	return -1
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
	keys := append(slices.Collect(maps.Keys(a)), slices.Collect(maps.Keys(b))...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// adoptImportSources: where a disk that exists in the state came from is
// unknown when the state does not say (an imported VM, or a disk that had no
// importFrom): a source given now is not a change, since it would only be
// used to create the disk. old is a copy the caller owns.
func adoptImportSources(old, news []VirtualMachineDisk) {
	for i := range old {
		if old[i].ImportFrom != nil {
			continue
		}
		for _, n := range news {
			if n.Interface == old[i].Interface {
				old[i].ImportFrom = n.ImportFrom
			}
		}
	}
}
