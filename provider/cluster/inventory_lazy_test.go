package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
)

// lazyInventory is fakeInventory whose hosts' storages and bridges are read
// on demand (hostResourceReader), as pveInventory's are.
type lazyInventory struct {
	fakeInventory
	bridges map[string][]string // by host; vmbr0 when not listed
	asked   []string
}

func (l *lazyInventory) HostResources(_ context.Context, hosts map[string]plan.HostFacts, names []string) {
	for _, n := range names {
		l.asked = append(l.asked, n)
		hf := hosts[n]
		hf.Storages = map[string][]string{"local": {"iso"}, "local-lvm": {"images"}}
		hf.Bridges = []string{"vmbr0"}
		if b, ok := l.bridges[n]; ok {
			hf.Bridges = b
		}
		hosts[n] = hf
	}
}

// Storages and bridges are read for the hosts that get new VMs only: every
// host of a new cluster, none when nothing is placed, the new worker's host
// on a scale-out. A bridge missing there still fails the plan.
func TestHostResourcesAreReadForNewVMsOnly(t *testing.T) {
	t.Parallel()
	inv := &lazyInventory{fakeInventory: fakeInventory{hosts: threeHosts()}}
	first, _, err := construct(t, inv, baseInputs())
	must(t, err)
	if slices.Sort(inv.asked); !slices.Equal(inv.asked, []string{"pve1", "pve2", "pve3"}) {
		t.Errorf("a new cluster read the storages and bridges of %v, want every host's", inv.asked)
	}

	inv.vms, inv.asked = observedFrom(t, first), nil
	if _, _, err := constructDry(t, true, inv, baseInputs()); err != nil {
		t.Fatal(err)
	}
	if len(inv.asked) != 0 {
		t.Errorf("a preview without changes read the storages and bridges of %v, want none", inv.asked)
	}

	in := baseInputs()
	in["workerPools"] = []any{map[string]any{"name": "workers", "count": 3}}
	rec, _, err := constructDry(t, true, inv, in)
	if err != nil {
		t.Fatal(err)
	}
	var newHost string
	for _, r := range rec.byType("VirtualMachine") {
		if r.name == "lab-workers-3" {
			newHost = r.inputs.Get("node").AsString()
		}
	}
	if !slices.Equal(inv.asked, []string{newHost}) {
		t.Errorf("a scale-out by one worker on %s read the storages and bridges of %v, want that host's only", newHost, inv.asked)
	}

	inv.bridges = map[string][]string{newHost: {"vmbr1"}}
	_, _, err = constructDry(t, true, inv, in)
	if err == nil || !strings.Contains(err.Error(), `bridge "vmbr0"`) {
		t.Errorf("a new worker on a host without vmbr0: %v, want the missing bridge", err)
	}
}

// reportedInventory is lazyInventory whose inventory reports some of each
// host's storages (reportedResourceReader), as /cluster/resources does for
// those the token may audit.
type reportedInventory struct {
	lazyInventory
	reported map[string][]string // storage -> content, reported on every host
	took     []string
}

func (r *reportedInventory) ReportedHostResources(_ context.Context, hosts map[string]plan.HostFacts, names []string) bool {
	for _, n := range names {
		r.took = append(r.took, n)
		hf := hosts[n]
		hf.Storages = map[string][]string{}
		for s, content := range r.reported {
			hf.Storages[s] = content
		}
		hf.Bridges = []string{"vmbr0"}
		hosts[n] = hf
	}
	return len(names) > 0
}

// A plan that passes with the storages the inventory reports reads no
// host's list; one that fails with them (a storage it does not report, as
// for a token that may only allocate space on it) is checked against the
// hosts' own lists, and passes when they have the storage.
func TestReportedStoragesAnswerOnlyWhatTheyPass(t *testing.T) {
	t.Parallel()
	all := map[string][]string{"local": {"iso"}, "local-lvm": {"images"}}
	inv := &reportedInventory{lazyInventory: lazyInventory{fakeInventory: fakeInventory{hosts: threeHosts()}}, reported: all}
	if _, _, err := construct(t, inv, baseInputs()); err != nil {
		t.Fatal(err)
	}
	if slices.Sort(inv.took); !slices.Equal(inv.took, []string{"pve1", "pve2", "pve3"}) || len(inv.asked) != 0 {
		t.Errorf("a new cluster whose storages the inventory reports took them for %v and read the lists of %v, "+
			"want every host's taken and none read", inv.took, inv.asked)
	}

	inv = &reportedInventory{lazyInventory: lazyInventory{fakeInventory: fakeInventory{hosts: threeHosts()}},
		reported: map[string][]string{"local": {"iso"}}}
	if _, _, err := construct(t, inv, baseInputs()); err != nil {
		t.Fatalf("local-lvm not reported by the inventory but on every host: %v", err)
	}
	if slices.Sort(inv.asked); !slices.Equal(inv.asked, []string{"pve1", "pve2", "pve3"}) {
		t.Errorf("a plan the reported storages fail read the lists of %v, want every host's", inv.asked)
	}
}
