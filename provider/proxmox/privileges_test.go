package proxmox

import (
	"strings"
	"testing"
)

// TestPrivilegeFailuresFollowPropagation: a new VM (no vmId) needs its
// privileges to propagate from /vms; an ACL set with --propagate 0 there
// does not reach it, one on the VM's pool does, and "any" needs one only.
func TestPrivilegeFailuresFollowPropagation(t *testing.T) {
	t.Parallel()
	lookup := func(answers map[string]map[string]bool) func(string) (map[string]bool, error) {
		return func(path string) (map[string]bool, error) { return answers[path], nil }
	}
	newVM := need{Input: "memory", Path: "/vms", Privs: []string{"VM.Config.Memory"}, Inherit: true, Role: "ProxmoxTalosVM", Why: "to set memory"}
	f, _ := privilegeFailures("ci@pve!tk", []need{newVM}, lookup(map[string]map[string]bool{"/vms": {"VM.Config.Memory": false}}))
	if len(f) != 1 || f[0].Property != "memory" || !strings.Contains(f[0].Reason, "lacks VM.Config.Memory on /vms (propagated") ||
		!strings.Contains(f[0].Reason, "`pveum acl modify /vms --roles ProxmoxTalosVM --tokens 'ci@pve!tk'`") ||
		!strings.Contains(f[0].Reason, "--users ci@pve") {
		t.Errorf("not propagated: %v", f)
	}
	if f, _ := privilegeFailures("ci@pve!tk", []need{newVM}, lookup(map[string]map[string]bool{"/vms": {"VM.Config.Memory": true}})); len(f) != 0 {
		t.Errorf("propagated: %v", f)
	}
	inPool := newVM
	inPool.Or = &need{Path: "/pool/k8s", Privs: []string{"VM.Config.Memory"}}
	if f, _ := privilegeFailures("ci@pve!tk", []need{inPool}, lookup(map[string]map[string]bool{"/pool/k8s": {"VM.Config.Memory": false}})); len(f) != 0 {
		t.Errorf("the pool's ACL should do: %v", f)
	}
	anyOf := need{Input: "iso", Path: "/storage/local", Privs: []string{"Datastore.AllocateSpace", "Datastore.Audit"}, Any: true, Role: "ProxmoxTalosImage"}
	if f, _ := privilegeFailures("ci@pve!tk", []need{anyOf}, lookup(map[string]map[string]bool{"/storage/local": {"Datastore.Audit": true}})); len(f) != 0 {
		t.Errorf("one of any: %v", f)
	}
}

// TestVMNeedsFollowInputs: what a VM needs comes from its inputs: an
// explicit vmId checks that VM's path, PVE 8 wants VM.Monitor for the agent.
func TestVMNeedsFollowInputs(t *testing.T) {
	t.Parallel()
	id := 104
	enabled := true
	none := ""
	a := VirtualMachineArgs{Node: "pve1", VMID: &id, Pool: &none, Agent: &VirtualMachineAgent{Enabled: &enabled},
		NetworkDevices: []VirtualMachineNetworkDevice{{Bridge: "vmbr1", VLANID: &id}}}
	keys, err := createParams(a)
	if err != nil {
		t.Fatal(err)
	}
	var paths, privs []string
	for _, n := range vmNeeds(a, keys, nil, "k8s", "8.4.1", unknowns{}) {
		paths = append(paths, n.Path)
		privs = append(privs, n.Privs...)
	}
	joined := strings.Join(paths, " ")
	if !strings.Contains(joined, "/vms/104") || strings.Contains(joined, "/vms ") ||
		!strings.Contains(joined, "/sdn/zones/localnetwork/vmbr1/104") || !strings.Contains(joined, "/nodes/pve1") ||
		!strings.Contains(joined, "/pool/k8s") {
		t.Errorf("paths: %v", paths)
	}
	if p := strings.Join(privs, " "); !strings.Contains(p, "VM.Monitor") || strings.Contains(p, "VM.GuestAgent.Audit") ||
		!strings.Contains(p, "VM.Config.Network") {
		t.Errorf("privileges on PVE 8: %v", privs)
	}
}
