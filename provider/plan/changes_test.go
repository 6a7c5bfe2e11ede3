package plan

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Spec)
		// want maps node -> action; nodes not listed must be unchanged.
		want    map[string]Action
		reason  string // a reason some changed node must give
		config  string // a config input some node must list as changed
		summary string // exact String()
	}{
		{
			name:    "add a worker",
			edit:    func(s *Spec) { s.WorkerPools[0].Count = 3 },
			want:    map[string]Action{"lab-workers-3": ActionAdd},
			summary: "1 added: lab-workers-3",
		},
		{
			name:    "raise a pool's cores",
			edit:    func(s *Spec) { s.WorkerPools[0].Size.Cores = ptr(4) },
			want:    map[string]Action{"lab-workers-1": ActionReboot, "lab-workers-2": ActionReboot},
			reason:  "cores 2 → 4",
			summary: "2 rebooted one at a time (cores 2 → 4): lab-workers-1, lab-workers-2",
		},
		{
			name:    "bump Talos",
			edit:    func(s *Spec) { s.TalosVersion = "v1.12.6" },
			want:    map[string]Action{"lab-cp-1": ActionUpgrade, "lab-cp-2": ActionUpgrade, "lab-cp-3": ActionUpgrade, "lab-workers-1": ActionUpgrade, "lab-workers-2": ActionUpgrade},
			reason:  "talosVersion v1.12.5 → v1.12.6",
			summary: "all 5 nodes upgraded one at a time, control planes first (Talos v1.12.5 → v1.12.6; VMs kept)",
		},
		{
			name:   "add an extension",
			edit:   func(s *Spec) { s.Image.Extensions = []string{"qemu-guest-agent", "iscsi-tools"} },
			want:   map[string]Action{"lab-cp-1": ActionUpgrade, "lab-cp-2": ActionUpgrade, "lab-cp-3": ActionUpgrade, "lab-workers-1": ActionUpgrade, "lab-workers-2": ActionUpgrade},
			reason: "image schematic",
		},
		{
			name:    "bump Kubernetes",
			edit:    func(s *Spec) { s.KubernetesVersion = "v1.35.3" },
			want:    map[string]Action{"lab-cp-1": ActionUpdate, "lab-cp-2": ActionUpdate, "lab-cp-3": ActionUpdate, "lab-workers-1": ActionUpdate, "lab-workers-2": ActionUpdate},
			summary: "all 5 nodes updated live, no reboot; Kubernetes v1.35.2 → v1.35.3, control plane components first, then kubelets node by node",
		},
		{
			// the VMs' update moves their OS disks live: listed, not "no node changes"
			name: "move the disks to another storage",
			edit: func(s *Spec) {
				for i := range s.Hosts {
					s.Hosts[i].DiskStorage = "fast"
				}
			},
			want:    map[string]Action{"lab-cp-1": ActionUpdate, "lab-cp-2": ActionUpdate, "lab-cp-3": ActionUpdate, "lab-workers-1": ActionUpdate, "lab-workers-2": ActionUpdate},
			reason:  "diskStorage local-lvm → fast",
			summary: "all 5 nodes updated live, no reboot (diskStorage local-lvm → fast; disks moved one node at a time, cluster health checked after each)",
		},
		{
			// tags and onboot apply to the running VM at once (qemu-server
			// $fast_plug_option): listed, and not as a reboot
			name:    "tag the VMs and stop starting them with their host",
			edit:    func(s *Spec) { s.VM.Tags = []string{"Prod"}; s.VM.OnBoot = ptr(false) },
			want:    map[string]Action{"lab-cp-1": ActionUpdate, "lab-cp-2": ActionUpdate, "lab-cp-3": ActionUpdate, "lab-workers-1": ActionUpdate, "lab-workers-2": ActionUpdate},
			summary: "all 5 nodes updated live, no reboot (tags +prod; onBoot true → false)",
		},
		{
			// the agent device stays pending until the VM restarts
			name:   "leave out the guest agent's extension",
			edit:   func(s *Spec) { s.Image.Extensions = []string{"siderolabs/iscsi-tools"} },
			want:   map[string]Action{"lab-cp-1": ActionUpgrade, "lab-cp-2": ActionUpgrade, "lab-cp-3": ActionUpgrade, "lab-workers-1": ActionUpgrade, "lab-workers-2": ActionUpgrade},
			reason: "guest agent on → off",
		},
		{
			name:   "change a kubelet-relevant label on one pool",
			edit:   func(s *Spec) { s.WorkerPools[0].Labels = map[string]string{"tier": "web"} },
			want:   map[string]Action{"lab-workers-1": ActionUpdate, "lab-workers-2": ActionUpdate},
			config: "nodeLabels",
		},
		{
			name: "add a registry mirror",
			edit: func(s *Spec) {
				s.RegistryMirrors = map[string]RegistryMirror{"docker.io": {Endpoints: []string{"https://m"}}}
			},
			want:   map[string]Action{"lab-cp-1": ActionUpdate, "lab-cp-2": ActionUpdate, "lab-cp-3": ActionUpdate, "lab-workers-1": ActionUpdate, "lab-workers-2": ActionUpdate},
			config: "registryMirrors",
		},
		{
			name:   "change the VIP",
			edit:   func(s *Spec) { s.VIP = "10.0.0.6" },
			want:   map[string]Action{"lab-cp-1": ActionUpdate, "lab-cp-2": ActionUpdate, "lab-cp-3": ActionUpdate, "lab-workers-1": ActionUpdate, "lab-workers-2": ActionUpdate},
			config: "vip",
		},
		{
			name:    "remove a control plane and a worker",
			edit:    func(s *Spec) { s.ControlPlane.Count = ptr(1); s.WorkerPools[0].Count = 1 },
			want:    map[string]Action{"lab-cp-2": ActionRemove, "lab-cp-3": ActionRemove, "lab-workers-2": ActionRemove},
			summary: "3 removed one at a time (drained, control planes leave etcd first): lab-cp-2, lab-cp-3, lab-workers-2",
		},
		{
			name:    "remove control planes",
			edit:    func(s *Spec) { s.ControlPlane.Count = ptr(1) },
			want:    map[string]Action{"lab-cp-2": ActionRemove, "lab-cp-3": ActionRemove},
			summary: "2 removed one at a time (etcd leave first): lab-cp-2, lab-cp-3",
		},
		{
			name:    "remove a worker",
			edit:    func(s *Spec) { s.WorkerPools[0].Count = 1 },
			want:    map[string]Action{"lab-workers-2": ActionRemove},
			summary: "1 removed (drained first): lab-workers-2",
		},
		{
			name:   "change the gateway",
			edit:   func(s *Spec) { s.Network.Gateway = "10.0.0.254" },
			want:   map[string]Action{"lab-cp-1": ActionReboot, "lab-cp-2": ActionReboot, "lab-cp-3": ActionReboot, "lab-workers-1": ActionReboot, "lab-workers-2": ActionReboot},
			reason: "network settings (gateway, DNS) change",
		},
		{
			name:   "grow a disk",
			edit:   func(s *Spec) { s.WorkerPools[0].Size.DiskGiB = ptr(40) },
			want:   map[string]Action{"lab-workers-1": ActionUpdate, "lab-workers-2": ActionUpdate},
			reason: "diskSize 20 → 40 GiB",
			summary: "2 updated live, no reboot (diskSize 20 → 40 GiB; disks grown one node at a time, cluster health checked after each): " +
				"lab-workers-1, lab-workers-2",
		},
	}
	old := mustComputeState(baseSpec())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			tt.edit(&spec)
			next := mustCompute(t, spec, roomy(), old).State()
			s := Compare(old, next)
			got := map[string]Action{}
			var reasons, configs []string
			for _, c := range s.Nodes {
				got[c.Name] = c.Action
				reasons = append(reasons, c.Reasons...)
				configs = append(configs, c.ConfigChanged...)
			}
			if len(got) != len(tt.want) {
				t.Errorf("changes = %v, want %v", got, tt.want)
			}
			for n, a := range tt.want {
				if got[n] != a {
					t.Errorf("%s: %v, want %v (reasons %v)", n, got[n], a, reasons)
				}
			}
			if tt.reason != "" && !slices.ContainsFunc(reasons, func(r string) bool { return strings.Contains(r, tt.reason) }) {
				t.Errorf("no reason %q in %v", tt.reason, reasons)
			}
			if tt.config != "" && !slices.Contains(configs, tt.config) {
				t.Errorf("config changes %v lack %q", configs, tt.config)
			}
			if tt.summary != "" && s.String() != tt.summary {
				t.Errorf("summary = %q\nwant      %q", s.String(), tt.summary)
			}
		})
	}
}

func TestCompareOrderAndRefinement(t *testing.T) {
	t.Parallel()
	old := mustComputeState(baseSpec())
	spec := baseSpec()
	spec.Patches = []string{"machine:\n  sysctls:\n    vm.max_map_count: \"262144\""}
	spec.WorkerPools[0].Count = 3
	s := Compare(old, mustCompute(t, spec, roomy(), old).State())
	var order []string
	for _, c := range s.Nodes {
		order = append(order, c.Name)
	}
	want := []string{"lab-cp-1", "lab-cp-2", "lab-cp-3", "lab-workers-1", "lab-workers-2", "lab-workers-3"}
	if !slices.Equal(order, want) {
		t.Errorf("order = %v, want control planes first", order)
	}
	// The component learns from Talos' rules that the patch needs a reboot.
	s.MarkReboot("lab-workers-1", "machine config: sysctls need a reboot")
	s.MarkReboot("lab-workers-3", "ignored: an added node is not rebooted")
	if got := s.Names(ActionReboot); !slices.Equal(got, []string{"lab-workers-1"}) {
		t.Errorf("rebooted = %v", got)
	}
	if got := s.Names(ActionAdd); !slices.Equal(got, []string{"lab-workers-3"}) {
		t.Errorf("added = %v", got)
	}
	wantS := "1 added: lab-workers-3; 1 rebooted (machine config: sysctls need a reboot): lab-workers-1; 4 updated live, no reboot: lab-cp-1, lab-cp-2, lab-cp-3, lab-workers-2"
	if s.String() != wantS {
		t.Errorf("summary = %q", s.String())
	}
}

func TestCompareCreateAndDestroy(t *testing.T) {
	t.Parallel()
	st := mustComputeState(baseSpec())
	if got := Compare(nil, st).Names(ActionAdd); len(got) != 5 {
		t.Errorf("new cluster adds %v", got)
	}
	if got := Compare(st, nil).Names(ActionRemove); len(got) != 5 {
		t.Errorf("destroy removes %v", got)
	}
	if s := Compare(st, st); s.String() != "no node changes" {
		t.Errorf("same state: %s", s)
	}
}

// TestEveryConfigInputIsFingerprinted guards Compare: a machine config input
// missing from the fingerprints would change silently in a preview.
func TestEveryConfigInputIsFingerprinted(t *testing.T) {
	t.Parallel()
	notConfig := map[string]bool{
		// Compared on their own, or unchangeable.
		"Name": true, "TalosVersion": true, "KubernetesVersion": true, "Image": true, "Role": true,
	}
	p := mustCompute(t, baseSpec(), roomy(), nil)
	base := p.configFingerprints(&p.Nodes[0])
	check := func(structPtr reflect.Value) {
		st := structPtr.Elem()
		for i := range st.NumField() {
			f := st.Type().Field(i)
			if notConfig[f.Name] {
				continue
			}
			saved := reflect.New(f.Type).Elem()
			saved.Set(st.Field(i))
			mutate(st.Field(i))
			if reflect.DeepEqual(p.configFingerprints(&p.Nodes[0]), base) {
				t.Errorf("%s.%s is not part of any config fingerprint", st.Type().Name(), f.Name)
			}
			st.Field(i).Set(saved)
		}
	}
	check(reflect.ValueOf(&p.Cluster))
	check(reflect.ValueOf(&p.Nodes[0].Config))
}

// mutate changes a value to a different one of the same type.
func mutate(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("mutated"), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
	case reflect.Struct:
		mutate(v.Field(0))
	default:
		panic("mutate: unhandled kind " + v.Kind().String())
	}
}

// What the component learns from the nodes themselves refines the summary.
func TestSummaryMark(t *testing.T) {
	var s Summary
	s.Nodes = []NodeChange{{Name: "a", Role: RoleControlPlane, Action: ActionUpgrade, Reasons: []string{"talosVersion"}}}
	s.Mark("a", RoleControlPlane, ActionReboot, "machine config: machine.env")
	s.Mark("w1", RoleWorker, ActionReboot, "machine config: machine.env")
	s.Mark("w2", RoleWorker, ActionUpdate, "machine config: 1 path")
	if got := s.String(); got != "1 upgraded (new installer image; VMs kept): a; 1 rebooted (machine config: machine.env): w1; 1 updated live, no reboot: w2" {
		t.Errorf("summary %q", got)
	}
	if r := s.Nodes[0].Reasons; len(r) != 2 {
		t.Errorf("reasons of a: %v", r)
	}
}

// What a state does not know (a VM whose node is offline: no tags, onBoot
// or agent) is no change; tags compare as Proxmox keeps them, a set.
func TestCompareVMSettingsNotKnown(t *testing.T) {
	t.Parallel()
	next := mustComputeState(baseSpec())
	old := mustComputeState(baseSpec())
	for i := range old.Nodes {
		old.Nodes[i].Tags, old.Nodes[i].OnBoot, old.Nodes[i].Agent, old.Nodes[i].DiskStorage = "", nil, nil, ""
	}
	if s := Compare(old, next); s.String() != NoNodeChanges {
		t.Errorf("unknown settings: %s", s)
	}
	spec := baseSpec()
	spec.VM.Tags = []string{"b", "A"}
	a := mustComputeState(spec)
	spec.VM.Tags = []string{"a", "B", "a"}
	if s := Compare(a, mustComputeState(spec)); s.String() != NoNodeChanges {
		t.Errorf("tags in another order or case: %s", s)
	}
}
