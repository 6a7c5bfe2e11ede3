package plan

import (
	"reflect"
	"strings"
	"testing"
)

func TestPlacement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		edit     func(*Spec)
		facts    Facts
		want     map[string]string
		wantWarn string
	}{
		{
			name:  "one control plane per host, workers balanced",
			edit:  func(s *Spec) { s.WorkerPools[0].Count = 4 },
			facts: roomy(),
			want: map[string]string{
				"lab-cp-1": "pve1", "lab-cp-2": "pve2", "lab-cp-3": "pve3",
				"lab-workers-1": "pve1", "lab-workers-2": "pve2", "lab-workers-3": "pve3", "lab-workers-4": "pve1",
			},
		},
		{
			name: "three control planes on two hosts warn about quorum",
			edit: func(s *Spec) {
				s.Hosts = s.Hosts[:2]
				s.WorkerPools = nil
			},
			facts:    roomy(),
			want:     map[string]string{"lab-cp-1": "pve1", "lab-cp-2": "pve2", "lab-cp-3": "pve1"},
			wantWarn: "control planes lab-cp-1, lab-cp-3 share host pve1",
		},
		{
			name: "five control planes on three hosts: no host holds a quorum",
			edit: func(s *Spec) {
				s.ControlPlane.Count = ptr(5)
				s.WorkerPools = nil
			},
			facts: roomy(),
			want: map[string]string{
				"lab-cp-1": "pve1", "lab-cp-2": "pve2", "lab-cp-3": "pve3", "lab-cp-4": "pve1", "lab-cp-5": "pve2",
			},
		},
		{
			name: "a host without room is skipped",
			edit: func(s *Spec) { s.WorkerPools = nil },
			facts: Facts{Hosts: map[string]HostFacts{
				"pve1": {Online: true, FreeMemoryMiB: 2048, CPUs: 8},
				"pve2": {Online: true, FreeMemoryMiB: 64 * 1024, CPUs: 8},
				"pve3": {Online: true, FreeMemoryMiB: 64 * 1024, CPUs: 8},
			}},
			want:     map[string]string{"lab-cp-1": "pve2", "lab-cp-2": "pve3", "lab-cp-3": "pve2"},
			wantWarn: "share host pve2",
		},
		{
			name: "an offline host is skipped",
			edit: func(s *Spec) { s.WorkerPools[0].Count = 1 },
			facts: Facts{Hosts: map[string]HostFacts{
				"pve1": {Online: true, FreeMemoryMiB: 64 * 1024},
				"pve2": {Online: false, FreeMemoryMiB: 64 * 1024},
				"pve3": {Online: true, FreeMemoryMiB: 64 * 1024},
			}},
			want:     map[string]string{"lab-cp-1": "pve1", "lab-cp-2": "pve3", "lab-cp-3": "pve1", "lab-workers-1": "pve3"},
			wantWarn: "share host pve1",
		},
		{
			name: "pinned nodes stay where pinned and count for the spread",
			edit: func(s *Spec) {
				s.ControlPlane.Nodes = []NodeSpec{{Host: "pve3"}, {}, {}}
				s.WorkerPools[0].Count = 1
			},
			facts: roomy(),
			want:  map[string]string{"lab-cp-1": "pve3", "lab-cp-2": "pve1", "lab-cp-3": "pve2", "lab-workers-1": "pve1"},
		},
		{
			name: "each pool is spread on its own",
			edit: func(s *Spec) {
				s.ControlPlane.Count = ptr(1)
				s.WorkerPools = []WorkerPool{{Name: "a", Count: 2}, {Name: "b", Count: 2}}
			},
			facts: roomy(),
			want: map[string]string{
				"lab-cp-1": "pve1",
				"lab-a-1":  "pve2", "lab-a-2": "pve3",
				"lab-b-1": "pve1", "lab-b-2": "pve2",
			},
		},
		{
			name: "without facts every host is eligible",
			edit: func(s *Spec) { s.WorkerPools = nil },
			want: map[string]string{"lab-cp-1": "pve1", "lab-cp-2": "pve2", "lab-cp-3": "pve3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			tt.edit(&spec)
			p := mustCompute(t, spec, tt.facts, nil)
			if got := placement(p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("placement = %v\nwant        %v", got, tt.want)
			}
			warned := false
			for _, w := range p.Warnings {
				if strings.Contains(w, "share host") {
					warned = true
					if tt.wantWarn == "" || !strings.Contains(w, tt.wantWarn) {
						t.Errorf("unexpected warning %q", w)
					}
				}
			}
			if tt.wantWarn != "" && !warned {
				t.Errorf("no warning %q in %v", tt.wantWarn, p.Warnings)
			}
		})
	}
}

func TestCapacityErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*Spec)
		facts Facts
		want  []string
	}{
		{
			name: "the pool as a whole is short",
			edit: func(s *Spec) {
				s.ControlPlane.Size.MemoryMiB = ptr(8192)
				s.WorkerPools[0].Size.MemoryMiB = ptr(8192)
			},
			facts: facts(8192, "pve1", "pve2", "pve3"),
			want:  []string{"hosts:", "5 new VM(s) need 40960 MiB", "24576 MiB free", "short by 16384 MiB"},
		},
		{
			name:  "memory is there in total but no host fits the last node",
			edit:  func(s *Spec) { s.WorkerPools[0].Count = 1 },
			facts: facts(6000, "pve1", "pve2", "pve3"),
			want:  []string{"no host has room for node lab-workers-1 (4096 MiB", "pve1 1904 MiB"},
		},
		{
			name: "pinned nodes overflow their host",
			edit: func(s *Spec) {
				s.ControlPlane.Nodes = []NodeSpec{{Host: "pve1"}, {Host: "pve1"}, {Host: "pve2"}}
			},
			facts: facts(6144, "pve1", "pve2", "pve3"),
			want:  []string{"hosts[0]:", "host pve1 has 6144 MiB", "lab-cp-1, lab-cp-2", "need 8192 MiB more", "short by 2048 MiB"},
		},
		{
			name:  "a pinned node on an offline host",
			edit:  func(s *Spec) { s.ControlPlane.Nodes = []NodeSpec{{Host: "pve2"}} },
			facts: Facts{Hosts: map[string]HostFacts{"pve1": {Online: true, FreeMemoryMiB: 1 << 20}, "pve2": {}, "pve3": {Online: true, FreeMemoryMiB: 1 << 20}}},
			want:  []string{"controlPlane.nodes[0].host:", "pve2", "offline"},
		},
		{
			name:  "every host offline",
			facts: Facts{Hosts: map[string]HostFacts{"pve1": {}, "pve2": {}, "pve3": {}}},
			want:  []string{"every host is offline"},
		},
		{
			name: "more vCPUs than a pinned host has",
			edit: func(s *Spec) {
				s.ControlPlane.Nodes = []NodeSpec{{Host: "pve1"}}
				s.ControlPlane.Size.Cores = ptr(16)
			},
			facts: roomy(),
			want:  []string{"controlPlane.nodes[0]:", "needs 16 vCPUs but host pve1 has 8 CPUs"},
		},
		{
			name:  "a host that is not a Proxmox node",
			edit:  func(s *Spec) { s.Hosts = append(s.Hosts, Host{Node: "pve9"}) },
			facts: roomy(),
			want:  []string{"hosts[3].node:", `"pve9" is not a node of the Proxmox cluster`, "pve1, pve2, pve3"},
		},
		{
			name:  "a pinned host outside the pool",
			edit:  func(s *Spec) { s.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{Host: "pve7"}}} },
			facts: roomy(),
			want:  []string{"workerPools[0].nodes[0].host:", `"pve7" is not in the host pool (pve1, pve2, pve3)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			if tt.edit != nil {
				tt.edit(&spec)
			}
			wantContains(t, computeErr(t, spec, tt.facts, nil), tt.want...)
		})
	}
}

func TestCapacityCountsOnlyWhatIsNew(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	first := mustCompute(t, spec, roomy(), nil)
	prev := first.State()

	// The hosts are now nearly full (the cluster's own VMs use the memory).
	tight := facts(1024, "pve1", "pve2", "pve3")
	if _, err := Compute(spec, tight, prev); err != nil {
		t.Fatalf("unchanged cluster on full hosts: %v", err)
	}
	// Growing every worker by 2 GiB needs 2 GiB on pve1 and pve2.
	spec.WorkerPools[0].Size.MemoryMiB = ptr(6144)
	wantContains(t, computeErr(t, spec, tight, prev), "host pve1 has 1024 MiB", "need 2048 MiB more", "short by 1024 MiB")
	// Adding a worker needs its whole memory.
	spec = baseSpec()
	spec.WorkerPools[0].Count = 3
	wantContains(t, computeErr(t, spec, tight, prev), "1 new VM(s) need 4096 MiB", "short by 1024 MiB")
}
