package proxmox

import (
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

func TestJudgeLive(t *testing.T) {
	st := VirtualMachineState{VirtualMachineArgs: VirtualMachineArgs{Node: "pve1", Name: ptr("cp1")}, VMID: 104}
	news := st.VirtualMachineArgs
	stoppedArgs := news
	stoppedArgs.Started = ptr(false)
	tmpl := news
	tmpl.Template = ptr(true)
	guest := func(node, name, status string) pve.ClusterVM {
		return pve.ClusterVM{VMID: 104, Type: "qemu", Node: node, Name: name, Status: status}
	}
	for _, tc := range []struct {
		name  string
		inv   pve.Inventory
		news  VirtualMachineArgs
		want  liveKind
		words string
	}{
		{"running as it should", pve.Inventory{Guests: []pve.ClusterVM{guest("pve1", "cp1", "running")}}, news, liveAsExpected, ""},
		{"stopped", pve.Inventory{Guests: []pve.ClusterVM{guest("pve1", "cp1", "stopped")}}, news, liveStopped,
			"VM cp1 (VM 104 on node pve1) is stopped: it will be started"},
		{"stopped as it should", pve.Inventory{Guests: []pve.ClusterVM{guest("pve1", "cp1", "stopped")}}, stoppedArgs, liveAsExpected, ""},
		{"running but started: false", pve.Inventory{Guests: []pve.ClusterVM{guest("pve1", "cp1", "running")}}, stoppedArgs, liveRunning,
			"will be shut down"},
		{"paused", pve.Inventory{Guests: []pve.ClusterVM{guest("pve1", "cp1", "paused")}}, news, livePaused,
			"VM cp1 (VM 104 on node pve1) is paused: it will be resumed"},
		{"suspended by its guest", pve.Inventory{Guests: []pve.ClusterVM{guest("pve1", "cp1", "suspended")}}, news, livePaused, "paused"},
		{"paused but started: false", pve.Inventory{Guests: []pve.ClusterVM{guest("pve1", "cp1", "paused")}}, stoppedArgs, liveRunning,
			"is paused: it will be shut down"},
		{"a template never runs", pve.Inventory{Guests: []pve.ClusterVM{guest("pve1", "cp1", "stopped")}}, tmpl, liveAsExpected, ""},
		{"deleted", pve.Inventory{}, news, liveGone, "no longer exists in Proxmox"},
		{"vmid reused by another VM elsewhere", pve.Inventory{Guests: []pve.ClusterVM{guest("pve2", "other", "running")}}, news, liveGone, ""},
		{"a container took the vmid", pve.Inventory{Guests: []pve.ClusterVM{{VMID: 104, Type: "lxc", Node: "pve1", Name: "cp1"}}}, news, liveGone, ""},
		{"migrated", pve.Inventory{Guests: []pve.ClusterVM{guest("pve2", "cp1", "running")}}, news, liveAsExpected, ""},
		{"node offline", pve.Inventory{Guests: []pve.ClusterVM{guest("pve1", "cp1", "unknown")}, Offline: map[string]bool{"pve1": true}},
			news, liveUnknown, "node pve1 is offline or does not answer: VM cp1 (VM 104 on node pve1) could not be checked"},
	} {
		f := judgeLive(tc.inv, st, tc.news)
		if f.kind != tc.want || !strings.Contains(f.msg, tc.words) {
			t.Errorf("%s: got %v %q, want %v with %q", tc.name, f.kind, f.msg, tc.want, tc.words)
		}
	}
}

// A VM under the state's VMID is another VM only when both its name and
// its SMBIOS uuid differ from the state's: a rename or a new uuid alone
// keeps it this resource's, and without a uuid on either side nothing can
// be told.
func TestOtherVM(t *testing.T) {
	t.Parallel()
	name := "a1"
	st := VirtualMachineState{SmbiosUUID: "11111111-1111-1111-1111-111111111111"}
	st.Name = &name
	ref := pve.VMRef{Node: "pve1", VMID: 100}
	for _, tc := range []struct {
		name, uuid string
		other      bool
	}{
		{"b1", "22222222-2222-2222-2222-222222222222", true},
		{"a1", "22222222-2222-2222-2222-222222222222", false},
		{"renamed", "11111111-1111-1111-1111-111111111111", false},
		{"b1", "", false},
	} {
		if got := otherVM(ref, st, tc.name, tc.uuid) != ""; got != tc.other {
			t.Errorf("name %q uuid %q: other %v, want %v", tc.name, tc.uuid, got, tc.other)
		}
	}
	if otherVM(ref, VirtualMachineState{}, "b1", "22222222-2222-2222-2222-222222222222") != "" {
		t.Error("a state without a uuid calls the VM another")
	}
}
