package e2e

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	ppve "github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// Two users on one Proxmox cluster, each with a stack of the same project,
// stack and resource names (so the same URNs) in their own backend, both
// interrupted while creating: each run adopts only the VMs its own stack
// began, never the other's (their creating tags differ), and destroys
// none of them. Both stacks end with their own VMs, the very ones their
// interrupted runs allocated, and the lab holds nothing else.
func TestFaultsTwoStacksAdoptOnlyTheirOwnVMs(t *testing.T) {
	t.Parallel()
	l, labConfig := harness.StartLab(t, lab.Options{NoTalos: true})
	users := make([]*harness.Project, 2)
	halfMade := make([][]string, 2) // per user, the VMs its killed run left outside its state
	creating := make([]map[string]bool, 2)
	for u := range users {
		before := labVMIDs(l)
		p := harness.NewYAMLProject(t, harness.NewEnv(t), "shared", twoVMStack)
		p.ConfigureLab(t, labConfig)
		users[u] = p
		killed := p.RunWith(t, map[string]string{"PROXMOXTALOS_TEST_KILL_AT": "after-create-task-started"}, "up", "--yes", "--skip-preview")
		if killed.ExitCode == 0 {
			t.Fatalf("user %d: the provider was not killed: %s", u, killed)
		}
		state := map[string]bool{}
		for _, id := range stateIDs(t, p.StackExport(t), vmType) {
			state[id] = true
		}
		creating[u] = map[string]bool{}
		for _, id := range labVMIDs(l) {
			if slices.Contains(before, id) || state[id] {
				continue
			}
			halfMade[u] = append(halfMade[u], id)
			for _, tag := range ppve.SplitTags(labConfigOf(t, l, id)["tags"]) {
				if ppve.IsCreating([]string{tag}) {
					creating[u][tag] = true
				}
			}
		}
		if len(halfMade[u]) == 0 || len(creating[u]) == 0 {
			t.Fatalf("user %d: the killed run left no VM with a creating tag to adopt: %+v", u, l.VMs())
		}
	}
	for tag := range creating[0] {
		if creating[1][tag] {
			t.Fatalf("both users' interrupted creates carry the identity %s", tag)
		}
	}

	// user 1 first: its preview names only its own VMs for adoption
	pre := users[1].Preview(t)
	if pre.ExitCode != 0 || !strings.Contains(pre.Output(), "interrupted run") {
		t.Fatalf("user 1's preview after the kills: %s", pre)
	}
	for _, id := range halfMade[0] {
		if strings.Contains(pre.Output(), fmt.Sprintf("VM %s ", vmidPart(id))) {
			t.Fatalf("user 1's preview names user 0's VM %s:\n%s", id, pre.Output())
		}
	}
	for u := 1; u >= 0; u-- {
		if up := users[u].Up(t); up.ExitCode != 0 {
			t.Fatalf("user %d: up after the kill: %s", u, up)
		}
		if u == 1 {
			for _, id := range halfMade[0] {
				if !slices.Contains(labVMIDs(l), id) {
					t.Fatalf("user 1's up destroyed user 0's half-made VM %s", id)
				}
			}
		}
	}
	var all []string
	for u, p := range users {
		var mine []string
		for _, id := range stateIDs(t, p.StackExport(t), vmType) {
			mine = append(mine, id)
		}
		for _, id := range halfMade[u] {
			if !slices.Contains(mine, id) {
				t.Fatalf("user %d did not adopt its own VM %s: its state holds %v", u, id, mine)
			}
		}
		if len(mine) != 2 {
			t.Fatalf("user %d's state holds %v, want 2 VMs", u, mine)
		}
		all = append(all, mine...)
	}
	sort.Strings(all)
	if got := labVMIDs(l); strings.Join(got, " ") != strings.Join(all, " ") {
		t.Fatalf("the lab holds %v, the two states %v", got, all)
	}
	for u, p := range users {
		if r := p.Destroy(t); r.ExitCode != 0 {
			t.Fatalf("user %d: destroy: %s", u, r)
		}
	}
	if vms := labVMIDs(l); len(vms) > 0 {
		t.Fatalf("the destroys left %v", vms)
	}
}

// labConfigOf is the configuration of the lab VM with resource ID
// <node>/<vmid>.
func labConfigOf(t *testing.T, l *lab.Lab, id string) map[string]string {
	t.Helper()
	var vmid int
	if _, err := fmt.Sscanf(vmidPart(id), "%d", &vmid); err != nil {
		t.Fatalf("resource ID %q: %v", id, err)
	}
	cur, _, _ := l.VMConfig(vmid)
	return cur
}

func vmidPart(id string) string {
	_, vmid, _ := strings.Cut(id, "/")
	return vmid
}

// oneVMStack is a YAML program with one small VM on pve1 named name.
func oneVMStack(name string) string {
	return fmt.Sprintf(`resources:
  vm:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties: {node: pve1, name: %s, memory: {dedicated: 512}, disks: [{interface: scsi0, storage: local-lvm, size: 2}]}
`, name)
}

// A VM deleted outside Pulumi whose VMID Proxmox then gives to another
// user's VM (GET /cluster/nextid hands out the lowest free one): the first
// stack's preview shows its VM as to be created again, not as an update
// of the other VM (a refresh drops it from the state); its `up` creates a
// new VM and its `destroy` removes that one, and neither touches the other
// user's VM.
func TestFaultsReusedVMIDIsLeftAlone(t *testing.T) {
	t.Parallel()
	l, labConfig := harness.StartLab(t, lab.Options{NoTalos: true})
	a := harness.NewYAMLProject(t, harness.NewEnv(t), "usera", oneVMStack("a1"))
	a.ConfigureLab(t, labConfig)
	if up := a.Up(t); up.ExitCode != 0 {
		t.Fatalf("user a: up: %s", up)
	}
	vmid := vmidOf(t, l, "a1")
	if err := l.DeleteVM(vmid); err != nil {
		t.Fatal(err)
	}
	b := harness.NewYAMLProject(t, harness.NewEnv(t), "userb", oneVMStack("b1"))
	b.ConfigureLab(t, labConfig)
	if up := b.Up(t); up.ExitCode != 0 {
		t.Fatalf("user b: up: %s", up)
	}
	if got := vmidOf(t, l, "b1"); got != vmid {
		t.Fatalf("user b's VM got VMID %d, not the freed %d: the test needs the reuse", got, vmid)
	}
	bBefore := labConfigOf(t, l, fmt.Sprintf("pve1/%d", vmid))

	pre := a.Preview(t)
	if out := pre.Output(); pre.ExitCode != 0 || !strings.Contains(out, "no longer exists in Proxmox") ||
		!strings.Contains(out, fmt.Sprintf("VMID %d on node pve1 now belongs to another VM (\"b1\"", vmid)) ||
		!strings.Contains(out, "+-") {
		t.Fatalf("user a's preview with its VMID reused: %s", pre)
	}
	// a refresh (here only previewed, to keep the Diff path below) drops
	// the VM from the state rather than read the other VM into it
	if r := a.Run(t, "refresh", "--preview-only"); r.ExitCode != 0 ||
		!strings.Contains(r.Output(), "it is dropped from the state") {
		t.Fatalf("user a's refresh with its VMID reused: %s", r)
	}
	requireUntouched := func(when string) {
		t.Helper()
		st := vmStatuses(l)
		now := labConfigOf(t, l, fmt.Sprintf("pve1/%d", vmid))
		if st["b1"] != "running" || now["name"] != "b1" || now["smbios1"] != bBefore["smbios1"] || now["tags"] != bBefore["tags"] {
			t.Fatalf("%s: user b's VM %d was touched: %v (was %v), statuses %v", when, vmid, now, bBefore, st)
		}
	}
	if up := a.Up(t); up.ExitCode != 0 {
		t.Fatalf("user a: up with its VMID reused: %s", up)
	}
	requireUntouched("after user a's up")
	if got := vmidOf(t, l, "a1"); got == vmid || vmStatuses(l)["a1"] != "running" {
		t.Fatalf("user a's VM after the up: VMID %d, statuses %v", got, vmStatuses(l))
	}
	if pre := a.Preview(t, "--expect-no-changes"); pre.ExitCode != 0 {
		t.Fatalf("user a's preview after the up: %s", pre)
	}
	if d := a.Destroy(t); d.ExitCode != 0 {
		t.Fatalf("user a: destroy: %s", d)
	}
	requireUntouched("after user a's destroy")
	if d := b.Destroy(t); d.ExitCode != 0 {
		t.Fatalf("user b: destroy: %s", d)
	}
	if vms := labVMIDs(l); len(vms) > 0 {
		t.Fatalf("the destroys left %v", vms)
	}
}
