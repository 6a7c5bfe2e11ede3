package plan

import (
	"slices"
	"testing"
)

// rebuilt is a state as Rebuild makes it from Proxmox: a cloned VM's
// clone source is not known.
func rebuilt(st *State) *State {
	st = withVMIDs(st)
	for i := range st.Nodes {
		if n := &st.Nodes[i]; n.Boot != "" && n.Boot[:6] == "clone:" {
			n.Boot = ""
		}
	}
	return st
}

// withVMIDs is a copy of st with the VM ids Proxmox allocated.
func withVMIDs(st *State) *State {
	c := *st
	c.Nodes = slices.Clone(st.Nodes)
	for i := range c.Nodes {
		c.Nodes[i].VMID = 101 + i
	}
	return &c
}

// A change only a new VM could make fails the preview, naming the nodes and
// what to do instead.
func TestReplacementsAreRefused(t *testing.T) {
	t.Parallel()
	isoState := mustComputeState(baseSpec())
	tmpl := baseSpec()
	tmpl.Image.Template = &Template{VMID: 9000}
	tmplState := mustComputeState(tmpl)
	all := "nodes lab-cp-1, lab-cp-2, lab-cp-3, lab-workers-1, lab-workers-2"
	for _, c := range []struct {
		name  string
		prev  *State
		edit  func(*Spec)
		wants []string
	}{
		{"scsi to virtio", isoState, func(s *Spec) { s.DiskInterface = "virtio" },
			[]string{"diskInterface: the OS disk of " + all + " is on the scsi bus and would move to virtio (Proxmox would detach the disk the node runs from)", "scale its pool down"}},
		{"ISO to template", isoState, func(s *Spec) { s.Image.Template = &Template{VMID: 9000} },
			[]string{"image.template: " + all + " booted the Talos ISO and would be cloned from a template instead", "add a new one in a later update"}},
		{"template to ISO", rebuilt(tmplState), func(s *Spec) {},
			[]string{"image.template: " + all + " was cloned from a template (its VM has no Talos ISO) and would boot the ISO instead"}},
		{"template to ISO, full state", tmplState, func(s *Spec) {},
			[]string{"image.template: " + all + " was cloned"}},
		{"pinned VM id", withVMIDs(isoState), func(s *Spec) {
			s.WorkerPools[0].Count = 0
			s.WorkerPools[0].Nodes = []NodeSpec{{Name: "lab-workers-1"}, {Name: "lab-workers-2", VMID: 4242}}
		}, []string{"workerPools[0].nodes[1].vmId: node lab-workers-2 is VM 105 and would become VM 4242"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := baseSpec()
			c.edit(&spec)
			wantContains(t, computeErr(t, spec, roomy(), c.prev), c.wants...)
		})
	}
}

// A new template is what new nodes are cloned from: existing nodes keep
// their VM, and the plan says nothing changes for them.
func TestNewTemplateIsForNewNodes(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Image.Template = &Template{VMID: 9000}
	for _, prev := range []*State{mustComputeState(spec), rebuilt(mustComputeState(spec))} {
		next := spec
		next.Image.Template = &Template{VMID: 9001}
		next.WorkerPools = []WorkerPool{{Name: "workers", Count: 3}}
		p := mustCompute(t, next, roomy(), prev)
		if s := Compare(prev, p.State()).String(); s != "1 added: lab-workers-3" {
			t.Errorf("new template: summary %q", s)
		}
	}
}
