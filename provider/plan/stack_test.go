package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestStackTag(t *testing.T) {
	a, b := StackTag("homelab", "dev"), StackTag("homelab", "prod")
	if a == b || !strings.HasPrefix(a, TagStackPrefix) || len(a) != len(TagStackPrefix)+12 || !pveTag.MatchString(a) {
		t.Fatalf("tags %q %q", a, b)
	}
	if StackTag("homelab", "dev") != a {
		t.Fatal("not stable")
	}
	// "a/b"+"c" and "a"+"b/c" are different stacks in practice only with
	// an org prefix; the tag is what a user sees, so it only needs to be
	// stable and distinct for different names.
	if StackTag("org/homelab", "dev") == a {
		t.Fatal("org ignored")
	}
}

func TestCheckStack(t *testing.T) {
	mine, theirs := StackTag("p", "dev"), StackTag("p", "prod")
	vm := func(id int, tags ...string) ObservedVM {
		return ObservedVM{VMID: id, Name: "lab-cp-1", Host: "pve1", Tags: append([]string{TagManaged, "cluster-lab", "controlplane"}, tags...)}
	}
	cases := []struct {
		name string
		vms  []ObservedVM
		want string // "" = accepted
	}{
		{"no VMs", nil, ""},
		{"own VMs", []ObservedVM{vm(101, mine)}, ""},
		{"VMs from before the stack tag", []ObservedVM{vm(101)}, ""},
		{"another stack's VM", []ObservedVM{vm(101, mine), vm(102, theirs)}, `clusterName: cluster "lab" already exists on this Proxmox cluster in another Pulumi stack: VM 102 (lab-cp-1 on pve1) carries the tag ` + theirs},
		{"several", []ObservedVM{vm(102, theirs), vm(103, theirs)}, "VMs 102 (lab-cp-1 on pve1), 103 (lab-cp-1 on pve1) carry"},
		{"another cluster", []ObservedVM{{VMID: 104, Tags: []string{TagManaged, "cluster-other", theirs}}}, ""},
		{"a template", []ObservedVM{{VMID: 105, Template: true, Tags: []string{TagManaged, "cluster-lab", theirs}}}, ""},
	}
	for _, c := range cases {
		err := CheckStack("lab", mine, c.vms)
		var pe *Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "choose another clusterName")):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestVMsCarryTheStackTag(t *testing.T) {
	s := baseSpec()
	s.StackTag = StackTag("p", "dev")
	p := mustCompute(t, s, roomy(), nil)
	for _, n := range p.Nodes {
		if !slices.Contains(n.VM.Tags, s.StackTag) {
			t.Errorf("%s tags %v", n.Name, n.VM.Tags)
		}
	}
}
