package plan

import (
	"slices"
	"strings"
	"testing"
)

func TestScaleInRemovalOrder(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.ControlPlane.Count = ptr(5)
	spec.WorkerPools = []WorkerPool{{Name: "a", Count: 3}, {Name: "b", Count: 2}}
	prev := mustCompute(t, spec, roomy(), nil).State()

	spec.ControlPlane.Count = ptr(1)
	spec.WorkerPools[0].Count = 1
	spec.WorkerPools[1].Count = 1
	p := mustCompute(t, spec, roomy(), prev)
	var got []string
	for _, r := range p.Removed {
		got = append(got, r.Name)
	}
	want := []string{"lab-a-3", "lab-a-2", "lab-b-2", "lab-cp-5", "lab-cp-4", "lab-cp-3", "lab-cp-2"}
	if !slices.Equal(got, want) {
		t.Errorf("removal order = %v, want workers first, then control planes highest first", got)
	}
	if p.Bootstrap != "lab-cp-1" {
		t.Errorf("bootstrap = %s", p.Bootstrap)
	}
}

func TestExistingNodesKeepIdentity(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	first := mustCompute(t, spec, roomy(), nil)
	prev := first.State()
	// Proxmox gave the VMs ids; the component records them.
	for i := range prev.Nodes {
		prev.Nodes[i].VMID = 100 + i
	}
	// Hosts reordered and a new host first: existing nodes do not move.
	spec.Hosts = []Host{{Node: "pve4"}, {Node: "pve3"}, {Node: "pve2"}, {Node: "pve1"}}
	spec.WorkerPools[0].Count = 3
	p := mustCompute(t, spec, facts(1<<20, "pve1", "pve2", "pve3", "pve4"), prev)
	for i, pn := range prev.Nodes {
		n := node(t, p, pn.Name)
		if n.VM.Host != pn.Host || n.VM.VMID != 100+i || n.VM.NICs[0].MAC != pn.MAC || !n.Existing {
			t.Errorf("%s moved: host %s->%s vmid %d mac %s->%s", pn.Name, pn.Host, n.VM.Host, n.VM.VMID, pn.MAC, n.VM.NICs[0].MAC)
		}
	}
	if w := node(t, p, "lab-workers-3"); w.VM.Host != "pve4" || w.VM.VMID != 0 || w.Existing {
		t.Errorf("new worker = host %s vmid %d existing %v, want the empty host pve4 and an allocated id", w.VM.Host, w.VM.VMID, w.Existing)
	}
}

// A running node never moves: its host leaving the pool, an explicit new
// host or a new address would boot a second VM with its name and address
// while the old one runs.
func TestRunningNodesDoNotMove(t *testing.T) {
	t.Parallel()
	prev := mustCompute(t, baseSpec(), roomy(), nil).State()
	for _, c := range []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"host leaves the pool", func(s *Spec) { s.Hosts = s.Hosts[:2] }, "node lab-cp-3 runs on host pve3, which is no longer in hosts"},
		{"explicit new host", func(s *Spec) {
			s.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{Name: "lab-workers-1", Host: "pve3"}, {Name: "lab-workers-2"}}}
		}, "workerPools[0].nodes[0].host: node lab-workers-1 runs on host pve1 and would move to pve3"},
		{"explicit new address", func(s *Spec) {
			s.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{Name: "lab-workers-1", Address: "10.0.0.44"}, {Name: "lab-workers-2"}}}
		}, "workerPools[0].nodes[0].address: node lab-workers-1 has address 10.0.0.13"},
		{"subnet moves away", func(s *Spec) {
			s.Network.Subnet, s.Network.Gateway = "10.1.0.0/24", "10.1.0.1"
			s.Network.AddressRange = &AddressRange{Start: "10.1.0.10", End: "10.1.0.50"}
			s.VIP = "10.1.0.5"
			s.Network.DNSServers = nil
		}, "node lab-cp-1 has address 10.0.0.10, outside the subnet 10.1.0.0/24"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := baseSpec()
			c.edit(&spec)
			msg := computeErr(t, spec, roomy(), prev)
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "remove the node") {
				t.Errorf("error %q, want %q and what to do", msg, c.want)
			}
		})
	}
}

func TestDayTwoErrors(t *testing.T) {
	t.Parallel()
	base := mustComputeState(baseSpec())
	tests := []struct {
		name string
		edit func(*Spec)
		prev func() *State
		want []string
	}{
		{
			name: "rename the cluster",
			edit: func(s *Spec) { s.Name = "lab2" },
			want: []string{"clusterName:", `named "lab" and cannot be renamed`},
		},
		{
			name: "replace every control plane at once",
			edit: func(s *Spec) {
				s.ControlPlane.Nodes = []NodeSpec{{Name: "new-1"}, {Name: "new-2"}, {Name: "new-3"}}
			},
			want: []string{"controlPlane:", "every existing control plane (lab-cp-1, lab-cp-2, lab-cp-3) would be removed"},
		},
		{
			name: "remove the first control plane while others stay",
			edit: func(s *Spec) {
				s.ControlPlane.Nodes = []NodeSpec{{Name: "lab-cp-2"}, {Name: "lab-cp-3"}, {Name: "lab-cp-4"}}
			},
			want: []string{"controlPlane:", "lab-cp-1 is the cluster's first control plane", "keep it and remove another one"},
		},
		{
			name: "turn a worker into a control plane",
			edit: func(s *Spec) {
				s.ControlPlane.Nodes = []NodeSpec{{Name: "lab-cp-1"}, {Name: "lab-cp-2"}, {Name: "lab-workers-1"}}
				s.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{Name: "lab-workers-2"}}}
			},
			want: []string{"controlPlane.nodes[2]:", `"lab-workers-1" was a worker and would become a controlplane`},
		},
		{
			name: "a Talos jump the node refuses",
			edit: func(s *Spec) { s.TalosVersion = "v1.12.5" },
			prev: func() *State {
				s := baseSpec()
				s.TalosVersion, s.KubernetesVersion = "v1.11.3", "v1.34.1"
				st := mustComputeState(s)
				st.Nodes[0].TalosVersion = "v1.9.6" // one node lagging behind
				return st
			},
			want: []string{"talosVersion:", "node lab-cp-1 runs Talos v1.9.6", "refuses to move to v1.12.5"},
		},
		{
			name: "downgrade Talos one minor",
			edit: func(s *Spec) { s.TalosVersion, s.KubernetesVersion = "v1.13.9", "v1.35.4" },
			prev: func() *State {
				s := baseSpec()
				s.TalosVersion, s.KubernetesVersion = "v1.14.1", "v1.35.4"
				return mustComputeState(s)
			},
			want: []string{"talosVersion:", "node lab-cp-1 runs Talos v1.14.1", "Talos v1.14.1 to v1.13.9 is a downgrade",
				"keep talosVersion on Talos 1.14: v1.14.1 (its newest known patch)"},
		},
		{
			name: "downgrade Kubernetes",
			edit: func(s *Spec) { s.KubernetesVersion = "v1.34.0" },
			want: []string{"kubernetesVersion:", "runs Kubernetes v1.35.2", "cannot be downgraded"},
		},
		{
			name: "skip a Kubernetes minor",
			edit: func(s *Spec) { s.KubernetesVersion = "v1.34.0" },
			prev: func() *State {
				s := baseSpec()
				s.KubernetesVersion = "v1.32.3"
				return mustComputeState(s)
			},
			want: []string{"kubernetesVersion:", "one minor version at a time (v1.32.3 to v1.34.0): upgrade to v1.33 first"},
		},
		{
			name: "shrink a disk",
			edit: func(s *Spec) { s.WorkerPools[0].Size.DiskGiB = ptr(15) },
			want: []string{"node lab-workers-1 has a 20 GiB OS disk: disks cannot shrink (to 15 GiB)"},
		},
		{
			name: "shrink a data disk",
			edit: func(s *Spec) { s.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 50}} },
			prev: func() *State {
				s := baseSpec()
				s.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 100}}
				return mustComputeState(s)
			},
			want: []string{"100 GiB data disk scsi1: disks cannot shrink (to 50 GiB)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			tt.edit(&spec)
			prev := base
			if tt.prev != nil {
				prev = tt.prev()
			}
			wantContains(t, computeErr(t, spec, roomy(), prev), tt.want...)
		})
	}
}

func TestControlPlanesThreeToOneToThree(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	three := mustCompute(t, spec, roomy(), nil)
	spec.ControlPlane.Count = ptr(1)
	one := mustCompute(t, spec, roomy(), three.State())
	if got := Compare(three.State(), one.State()).Names(ActionRemove); !slices.Equal(got, []string{"lab-cp-2", "lab-cp-3"}) {
		t.Errorf("3->1 removes %v", got)
	}
	spec.ControlPlane.Count = ptr(3)
	again := mustCompute(t, spec, roomy(), one.State())
	// The re-added control planes take the freed addresses and hosts back.
	if !slices.Equal(again.Endpoints.Talos, three.Endpoints.Talos) {
		t.Errorf("talos endpoints %v, want %v", again.Endpoints.Talos, three.Endpoints.Talos)
	}
	// One control plane per host again.
	got := placement(again)
	if distinct := map[string]bool{got["lab-cp-1"]: true, got["lab-cp-2"]: true, got["lab-cp-3"]: true}; len(distinct) != 3 {
		t.Errorf("control planes share a host: %v", got)
	}
}

func TestVersionsStickToTheRunningCluster(t *testing.T) {
	t.Parallel()
	old := baseSpec()
	old.TalosVersion, old.KubernetesVersion = "v1.11.3", "v1.33.4"
	prev := mustComputeState(old)
	// The versions are dropped from the spec (or the provider's defaults
	// moved on): the cluster keeps running what it runs.
	spec := baseSpec()
	spec.TalosVersion, spec.KubernetesVersion = "", ""
	p := mustCompute(t, spec, roomy(), prev)
	if p.Cluster.TalosVersion != "v1.11.3" || p.Cluster.KubernetesVersion != "v1.33.4" {
		t.Errorf("versions = %s / %s, want the running v1.11.3 / v1.33.4", p.Cluster.TalosVersion, p.Cluster.KubernetesVersion)
	}
	if s := Compare(prev, p.State()); len(s.Nodes) != 0 {
		t.Errorf("changes: %s", s)
	}
}

// Talos advises against skipping a minor (upgrades are tested between
// adjacent minors only): refused at preview, naming the release to take
// first, also where the target would accept the host (1.14 takes 1.12).
func TestTalosUpgradeSkippingAMinorIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ from, fromK8s, to, next string }{
		{"v1.10.7", "v1.33.4", "v1.12.5", "set talosVersion to v1.11.6 first, then to v1.12.5"},
		{"v1.12.7", "v1.35.4", "v1.14.1", "set talosVersion to v1.13.9 first, then to v1.14.1"},
	} {
		old := baseSpec()
		old.TalosVersion, old.KubernetesVersion = tc.from, tc.fromK8s
		spec := baseSpec()
		spec.TalosVersion, spec.KubernetesVersion = tc.to, tc.fromK8s
		got := computeErr(t, spec, roomy(), mustComputeState(old))
		for _, want := range []string{"talosVersion:", "runs Talos " + tc.from, "skips a minor release", tc.next} {
			if !strings.Contains(got, want) {
				t.Errorf("%s to %s: %q lacks %q", tc.from, tc.to, got, want)
			}
		}
	}
}

// 1.12 -> 1.13 -> 1.14 one minor per step, Kubernetes kept, then moved.
func TestTalosUpgradePathToTheNewest(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.TalosVersion, spec.KubernetesVersion = "v1.12.7", "v1.35.4"
	st := mustComputeState(spec)
	for _, step := range [][2]string{{"v1.13.9", "v1.35.4"}, {"v1.14.1", "v1.35.4"}, {"v1.14.1", "v1.36.3"}, {"v1.14.1", "v1.37.0"}} {
		spec.TalosVersion, spec.KubernetesVersion = step[0], step[1]
		p := mustCompute(t, spec, roomy(), st)
		if p.Cluster.TalosVersion != step[0] || p.Cluster.KubernetesVersion != step[1] {
			t.Fatalf("step to %v: plan runs %s / %s", step, p.Cluster.TalosVersion, p.Cluster.KubernetesVersion)
		}
		st = p.State()
	}
}
