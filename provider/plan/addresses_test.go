package plan

import (
	"maps"
	"reflect"
	"testing"
)

func TestAddressesStableAcrossScaling(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.WorkerPools = []WorkerPool{{Name: "a", Count: 2}, {Name: "b", Count: 2}}
	first := mustCompute(t, spec, roomy(), nil)
	before := addresses(first)
	wantFirst := map[string]string{
		"lab-cp-1": "10.0.0.10", "lab-cp-2": "10.0.0.11", "lab-cp-3": "10.0.0.12",
		"lab-a-1": "10.0.0.13", "lab-a-2": "10.0.0.14", "lab-b-1": "10.0.0.15", "lab-b-2": "10.0.0.16",
	}
	if !reflect.DeepEqual(before, wantFirst) {
		t.Fatalf("first addresses = %v", before)
	}

	tests := []struct {
		name string
		edit func(*Spec)
		// want lists the addresses that must hold; every node of the
		// first plan still present must keep its address.
		want map[string]string
	}{
		{
			name: "scale out the first pool: the new node takes the next free address",
			edit: func(s *Spec) { s.WorkerPools[0].Count = 3 },
			want: map[string]string{"lab-a-3": "10.0.0.17"},
		},
		{
			name: "add a pool in front: nobody is renumbered",
			edit: func(s *Spec) {
				s.WorkerPools = append([]WorkerPool{{Name: "gpu", Count: 1}}, s.WorkerPools...)
			},
			want: map[string]string{"lab-gpu-1": "10.0.0.17"},
		},
		{
			name: "scale in, then the freed address is reused by the next new node",
			edit: func(s *Spec) {
				s.WorkerPools[0].Count = 1 // frees .14
				s.WorkerPools[1].Count = 3 // b-3 is new
			},
			want: map[string]string{"lab-b-3": "10.0.0.14"},
		},
		{
			name: "control planes 3 -> 1 keeps the first",
			edit: func(s *Spec) { s.ControlPlane.Count = ptr(1) },
			want: map[string]string{"lab-cp-1": "10.0.0.10"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := baseSpec()
			s.WorkerPools = []WorkerPool{{Name: "a", Count: 2}, {Name: "b", Count: 2}}
			tt.edit(&s)
			p := mustCompute(t, s, roomy(), first.State())
			got := addresses(p)
			for n, a := range before {
				if g, ok := got[n]; ok && g != a {
					t.Errorf("existing node %s renumbered %s -> %s", n, a, g)
				}
			}
			for n, a := range tt.want {
				if got[n] != a {
					t.Errorf("%s = %q, want %s", n, got[n], a)
				}
			}
		})
	}
}

func TestControlPlaneScaleOutAroundExistingWorkers(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.ControlPlane.Count = ptr(1)
	one := mustCompute(t, spec, roomy(), nil)
	spec.ControlPlane.Count = ptr(3)
	three := mustCompute(t, spec, roomy(), one.State())
	want := map[string]string{
		"lab-cp-1": "10.0.0.10", "lab-workers-1": "10.0.0.11", "lab-workers-2": "10.0.0.12",
		"lab-cp-2": "10.0.0.13", "lab-cp-3": "10.0.0.14",
	}
	if got := addresses(three); !reflect.DeepEqual(got, want) {
		t.Errorf("addresses = %v, want %v", got, want)
	}
	// The new control planes go to the hosts without one.
	if got := placement(three); got["lab-cp-2"] != "pve2" || got["lab-cp-3"] != "pve3" || got["lab-cp-1"] != "pve1" {
		t.Errorf("placement = %v", got)
	}
}

func TestExplicitAddresses(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Network.AddressRange = nil
	spec.ControlPlane.Nodes = []NodeSpec{{Address: "10.0.0.21"}, {Address: "10.0.0.22"}, {Address: "10.0.0.23"}}
	spec.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{Name: "big", Address: "10.0.0.200"}}}
	p := mustCompute(t, spec, roomy(), nil)
	want := map[string]string{"lab-cp-1": "10.0.0.21", "lab-cp-2": "10.0.0.22", "lab-cp-3": "10.0.0.23", "big": "10.0.0.200"}
	if got := addresses(p); !reflect.DeepEqual(got, want) {
		t.Errorf("addresses = %v", got)
	}

	// Removing the middle control plane from the list does not rename the
	// third: unnamed listed nodes keep the name they had on their address.
	spec.ControlPlane.Nodes = []NodeSpec{{Address: "10.0.0.21"}, {Address: "10.0.0.23"}}
	spec.ControlPlane.Nodes = append(spec.ControlPlane.Nodes, NodeSpec{Address: "10.0.0.24"})
	p2 := mustCompute(t, spec, roomy(), p.State())
	got := addresses(p2)
	if got["lab-cp-3"] != "10.0.0.23" || got["lab-cp-1"] != "10.0.0.21" {
		t.Errorf("listed nodes renamed: %v", got)
	}
	if _, ok := got["lab-cp-2"]; ok {
		t.Errorf("lab-cp-2 should be gone (its address left the list): %v", got)
	}
	if a := got["lab-cp-4"]; a != "10.0.0.24" {
		t.Errorf("the new listed node should be lab-cp-4 (no reuse of a removed name): %v", got)
	}
}

func TestMixedExplicitAndRange(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	// The explicit address is inside the range: allocation skips it.
	spec.WorkerPools = append(spec.WorkerPools, WorkerPool{Name: "db", Nodes: []NodeSpec{{Address: "10.0.0.11"}}})
	p := mustCompute(t, spec, roomy(), nil)
	want := map[string]string{
		"lab-cp-1": "10.0.0.10", "lab-cp-2": "10.0.0.12", "lab-cp-3": "10.0.0.13",
		"lab-workers-1": "10.0.0.14", "lab-workers-2": "10.0.0.15", "lab-db-1": "10.0.0.11",
	}
	if got := addresses(p); !reflect.DeepEqual(got, want) {
		t.Errorf("addresses = %v\nwant        %v", got, want)
	}
}

func TestAddressErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Spec)
		prev func() *State
		want []string
	}{
		{
			name: "two nodes on one address",
			edit: func(s *Spec) {
				s.ControlPlane.Nodes = []NodeSpec{{Address: "10.0.0.30"}, {Address: "10.0.0.31"}, {Address: "10.0.0.30"}}
			},
			want: []string{"controlPlane.nodes[2].address:", "10.0.0.30 is already the address of node lab-cp-1"},
		},
		{
			name: "a node on the VIP",
			edit: func(s *Spec) {
				s.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{Address: "10.0.0.5"}}}
			},
			want: []string{"workerPools[0].nodes[0].address:", "10.0.0.5 is already the VIP"},
		},
		{
			name: "a node on the gateway",
			edit: func(s *Spec) {
				s.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{Address: "10.0.0.1"}}}
			},
			want: []string{"10.0.0.1 is already the gateway"},
		},
		{
			name: "an address outside the subnet",
			edit: func(s *Spec) {
				s.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{Address: "10.0.1.7"}}}
			},
			want: []string{"workerPools[0].nodes[0].address:", "10.0.1.7 is not a usable address of subnet 10.0.0.0/24"},
		},
		{
			name: "an address with a prefix",
			edit: func(s *Spec) {
				s.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{Address: "10.0.0.7/24"}}}
			},
			want: []string{"without a prefix length"},
		},
		{
			name: "the range is exhausted",
			edit: func(s *Spec) { s.Network.AddressRange = &AddressRange{Start: "10.0.0.10", End: "10.0.0.13"} },
			want: []string{"network.addressRange:", "10.0.0.10-10.0.0.13 has 4 addresses but 1 more are needed (for lab-workers-2)", "widen the range"},
		},
		{
			name: "no range and no addresses",
			edit: func(s *Spec) { s.Network.AddressRange = nil },
			want: []string{"network.addressRange:", "5 node(s) (lab-cp-1, lab-cp-2, lab-cp-3, lab-workers-1, lab-workers-2) have no address"},
		},
		{
			name: "no subnet",
			edit: func(s *Spec) { s.Network.Subnet = "" },
			want: []string{"network.subnet:", "required"},
		},
		{
			name: "subnet not in CIDR form",
			edit: func(s *Spec) { s.Network.Subnet = "10.0.0.0" },
			want: []string{"network.subnet:", "CIDR"},
		},
		{
			name: "range outside the subnet",
			edit: func(s *Spec) { s.Network.AddressRange = &AddressRange{Start: "10.0.0.200", End: "10.0.1.20"} },
			want: []string{"network.addressRange:", "not inside the usable addresses of subnet 10.0.0.0/24"},
		},
		{
			name: "range holding the network address",
			edit: func(s *Spec) { s.Network.AddressRange = &AddressRange{Start: "10.0.0.0", End: "10.0.0.20"} },
			want: []string{"network.addressRange:", "network and broadcast"},
		},
		{
			name: "range backwards",
			edit: func(s *Spec) { s.Network.AddressRange = &AddressRange{Start: "10.0.0.50", End: "10.0.0.10"} },
			want: []string{"the range ends (10.0.0.10) before it starts (10.0.0.50)"},
		},
		{
			name: "gateway outside the subnet",
			edit: func(s *Spec) { s.Network.Gateway = "192.168.1.1" },
			want: []string{"network.gateway:", "192.168.1.1 is not a usable address"},
		},
		{
			name: "bad DNS server",
			edit: func(s *Spec) { s.Network.DNSServers = []string{"dns.example.com"} },
			want: []string{"network.dnsServers[0]:", "not an IP address"},
		},
		{
			name: "an existing node's address given to a new node",
			edit: func(s *Spec) {
				s.WorkerPools = append(s.WorkerPools, WorkerPool{Name: "db", Nodes: []NodeSpec{{Name: "db", Address: "10.0.0.13"}}})
			},
			prev: func() *State { return mustComputeState(baseSpec()) },
			want: []string{"existing node lab-workers-1 has address 10.0.0.13, which is now the address of node db"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			tt.edit(&spec)
			var prev *State
			if tt.prev != nil {
				prev = tt.prev()
			}
			wantContains(t, computeErr(t, spec, roomy(), prev), tt.want...)
		})
	}
}

func TestVIPChecks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		vip  string
		want string
	}{
		{"10.0.1.5", "outside the node subnet 10.0.0.0/24"},
		{"10.0.0.20", "inside the address range 10.0.0.10-10.0.0.50"},
		{"10.0.0.1", "10.0.0.1 is already the gateway"},
		{"10.0.0.255", "outside the node subnet"}, // broadcast
		{"10.0.0.0", "outside the node subnet"},   // network address
		{"vip.example.com", "is not an IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.vip, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			spec.VIP = tt.vip
			wantContains(t, computeErr(t, spec, roomy(), nil), "vip:", tt.want)
		})
	}
}

func TestSecondaryNetwork(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Network.Secondary = &NIC{Bridge: "vmbr1", VLAN: 20, MTU: 9000, Subnet: "10.1.0.0/24", AddressRange: &AddressRange{Start: "10.1.0.100", End: "10.1.0.120"}}
	spec.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{SecondaryAddress: "10.1.0.7"}, {}}}
	p := mustCompute(t, spec, roomy(), nil)
	got := map[string]string{}
	for _, n := range p.Nodes {
		if len(n.VM.NICs) != 2 {
			t.Fatalf("%s has %d NICs", n.Name, len(n.VM.NICs))
		}
		sec := n.VM.NICs[1]
		if sec.Bridge != "vmbr1" || sec.VLAN != 20 || sec.MTU != 9000 || sec.MAC == n.VM.NICs[0].MAC {
			t.Errorf("%s secondary NIC = %+v", n.Name, sec)
		}
		got[n.Name] = sec.Address
	}
	want := map[string]string{
		"lab-cp-1": "10.1.0.100/24", "lab-cp-2": "10.1.0.101/24", "lab-cp-3": "10.1.0.102/24",
		"lab-workers-1": "10.1.0.7/24", "lab-workers-2": "10.1.0.103/24",
	}
	if !maps.Equal(got, want) {
		t.Errorf("secondary addresses = %v", got)
	}

	// Without a subnet the secondary NIC uses DHCP.
	spec = baseSpec()
	spec.Network.Secondary = &NIC{Bridge: "vmbr1"}
	p = mustCompute(t, spec, roomy(), nil)
	if a := p.Nodes[0].VM.NICs[1].Address; a != "" {
		t.Errorf("DHCP secondary got address %q", a)
	}
	spec.WorkerPools[0] = WorkerPool{Name: "workers", Nodes: []NodeSpec{{SecondaryAddress: "10.1.0.7"}}}
	wantContains(t, computeErr(t, spec, roomy(), nil), "secondaryAddress:", "uses DHCP")
}

func TestIPv6Subnet(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Network = Network{NIC: NIC{
		Subnet:       "fd00:10::/64",
		Gateway:      "fd00:10::1",
		AddressRange: &AddressRange{Start: "fd00:10::10", End: "fd00:10::ffff"},
	}}
	spec.VIP = "fd00:10::5"
	p := mustCompute(t, spec, roomy(), nil)
	if a := p.Nodes[0].VM.NICs[0].Address; a != "fd00:10::10/64" {
		t.Errorf("first address = %s", a)
	}
	if p.Cluster.Endpoint != "https://[fd00:10::5]:6443" {
		t.Errorf("endpoint = %s", p.Cluster.Endpoint)
	}
}

func mustComputeState(spec Spec) *State {
	p, err := Compute(spec, roomy(), nil)
	if err != nil {
		panic(err)
	}
	return p.State()
}

func TestListedNodesMatchPreviousAddressesByValue(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Network = Network{NIC: NIC{Subnet: "fd00:10::/64"}}
	spec.VIP = ""
	spec.ControlPlane.Nodes = []NodeSpec{{Address: "fd00:10::a"}}
	spec.WorkerPools = nil
	prev := mustCompute(t, spec, roomy(), nil).State()
	// The same address written differently is the same node.
	spec.ControlPlane.Nodes = []NodeSpec{{Address: "FD00:10:0::A"}}
	p := mustCompute(t, spec, roomy(), prev)
	if got := nodeNames(p); len(got) != 1 || got[0] != "lab-cp-1" || !p.Nodes[0].Existing {
		t.Errorf("nodes = %v", got)
	}
}
