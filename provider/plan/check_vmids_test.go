package plan

import (
	"strings"
	"testing"
)

// labGuests: a stranger's VM 300 on pve1, a container 301, templates 9000
// (pve1) and 9001 (pve2), a plain VM 9002 on pve1, and VM 400 of cluster
// "lab" (a create that was interrupted).
func labGuests(f Facts) Facts {
	f.Guests = map[int]Guest{
		300:  {Kind: "VM", Name: "db", Node: "pve1"},
		301:  {Kind: "container", Name: "dns", Node: "pve2"},
		9000: {Kind: "VM", Name: "talos-template", Node: "pve1", Template: true},
		9001: {Kind: "VM", Name: "talos-template", Node: "pve2", Template: true},
		9002: {Kind: "VM", Name: "golden", Node: "pve1"},
		400:  {Kind: "VM", Name: "lab-cp-1", Node: "pve1", Tags: []string{TagClusterPrefix + "lab"}},
	}
	return f
}

// Issue 15: a pinned VMID that is taken and a template that is missing are
// reported at preview against the component input, with the value, the
// reason and the fix, not by the child VirtualMachine.
func TestVMIDsNamedByTheInput(t *testing.T) {
	onePerHost := func(s *Spec) {
		s.Hosts = s.Hosts[:1]
		one := 1
		s.ControlPlane.Count = &one
		s.WorkerPools = nil
	}
	cases := []struct {
		name string
		edit func(*Spec)
		want []string
	}{
		{"pinned VMID taken by a VM", func(s *Spec) { s.ControlPlane.Nodes = []NodeSpec{{VMID: 200}, {VMID: 300}, {}} },
			[]string{"controlPlane.nodes[1].vmId:", `VMID 300 is taken by VM "db" on Proxmox node pve1`, "leave vmId out"}},
		{"pinned VMID taken by a container", func(s *Spec) { s.WorkerPools[0].Count = 0; s.WorkerPools[0].Nodes = []NodeSpec{{VMID: 301}} },
			[]string{"workerPools[0].nodes[0].vmId:", `VMID 301 is taken by container "dns"`}},
		{"template missing", func(s *Spec) { s.Image.Template = &Template{VMID: 9999} },
			[]string{"image.template.vmId:", "VMID 9999 does not exist on the Proxmox cluster", "leave image.template out"}},
		{"host template missing", func(s *Spec) { s.Image.Template = &Template{VMID: 9000}; s.Hosts[1].TemplateVMID = 9998 },
			[]string{"hosts[1].templateVmId:", "VMID 9998 does not exist"}},
		{"template is a container", func(s *Spec) { onePerHost(s); s.Image.Template = &Template{VMID: 301} },
			[]string{"image.template.vmId:", `VMID 301 is a container ("dns" on node pve2)`}},
		{"template on another node", func(s *Spec) { onePerHost(s); s.Hosts[0].Node = "pve3"; s.Image.Template = &Template{VMID: 9000} },
			[]string{"image.template.node:", "template 9000 is on Proxmox node pve1, not pve3", "set image.template.node: pve1"}},
		{"linked clone of a VM", func(s *Spec) {
			onePerHost(s)
			no := false
			s.Image.Template = &Template{VMID: 9002, FullClone: &no}
		}, []string{"image.template.fullClone:", `VM 9002 ("golden" on pve1) is not one`}},
	}
	for _, c := range cases {
		s := baseSpec()
		c.edit(&s)
		got := computeErr(t, s, labGuests(roomy()), nil)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
	}
	// Free VMIDs, this cluster's own VM, a template on each host, and
	// unknown guests are fine.
	s := baseSpec()
	s.ControlPlane.Nodes = []NodeSpec{{VMID: 400}, {VMID: 401}, {}}
	mustCompute(t, s, labGuests(roomy()), nil)
	s = baseSpec()
	s.Hosts = s.Hosts[:2]
	s.Image.Template = &Template{VMID: 9000}
	s.Hosts[1].TemplateVMID = 9001
	mustCompute(t, s, labGuests(roomy()), nil)
	s = baseSpec()
	s.Image.Template = &Template{VMID: 9999}
	mustCompute(t, s, roomy(), nil)
}
