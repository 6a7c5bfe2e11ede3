package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-go-provider/integration"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/proxmoxtalos/proxmoxtalos/provider/imagefactory"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/factory"
)

// labFactoryExtensions asks the lab's Image Factory (the image input's
// factory URL is the public one in these tests).
func labFactoryExtensions(t *testing.T) extensionChecker {
	t.Helper()
	f, err := factory.Start(factory.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return func(ctx context.Context, _, talosTag string, names []string) (string, error) {
		return (&imagefactory.Client{BaseURL: f.URL()}).CheckExtensionsOrWarn(ctx, talosTag, names)
	}
}

// fakeInventory answers like Proxmox would, from fixed data.
type fakeInventory struct {
	hosts map[string]plan.HostFacts
	vms   []plan.ObservedVM
	err   error
}

func (f *fakeInventory) Hosts(context.Context) (map[string]plan.HostFacts, error) {
	return f.hosts, f.err
}

func (f *fakeInventory) VMs(_ context.Context, cluster string) ([]plan.ObservedVM, error) {
	return f.vms, f.err
}

func threeHosts() map[string]plan.HostFacts {
	return map[string]plan.HostFacts{
		"pve1": {Online: true, FreeMemoryMiB: 32768, CPUs: 8},
		"pve2": {Online: true, FreeMemoryMiB: 32768, CPUs: 8},
		"pve3": {Online: true, FreeMemoryMiB: 32768, CPUs: 8},
	}
}

// vmids are the mocks' VMIDs by VM name: the same in every construct of the
// test binary, one of its own per name.
var vmids = struct {
	sync.Mutex
	byName map[string]int
}{byName: map[string]int{}}

func vmidOf(name string) int {
	vmids.Lock()
	defer vmids.Unlock()
	id, ok := vmids.byName[name]
	if !ok {
		id = 101 + len(vmids.byName)
		vmids.byName[name] = id
	}
	return id
}

// registration is one child resource the component registered.
type registration struct {
	typ, name string
	inputs    property.Map
	outputs   property.Map // what the mock answered
	deps      []string     // "Type::name" of each dependency
	ignore    []string     // ignoreChanges
	// stack is the call stack the registration sent (source positions)
	stack []string
}

func (r registration) key() string { return r.typ + "::" + r.name }

// recorder collects registrations and answers with plausible outputs.
type recorder struct {
	mu   sync.Mutex
	regs []registration
}

// One real secrets bundle per test binary: generating one is slow.
var testBundle = sync.OnceValue(func() *secrets.Bundle {
	b, err := talosconfig.NewSecrets("v1.12.5", time.Now())
	if err != nil {
		panic(err)
	}
	return b
})

var bundleYAML = sync.OnceValue(func() string {
	y, err := talosconfig.MarshalSecrets(testBundle())
	if err != nil {
		panic(err)
	}
	return y
})

func shortURN(urn string) string {
	i := strings.LastIndex(urn, "::")
	typ := urn[:i]
	typ = typ[strings.LastIndex(typ, ":")+1:]
	return typ + "::" + urn[i+2:]
}

// newResource records a child and answers for it. An unknown secret
// among the answer's outputs (an input echoed back) is left out: the
// integration monitor marshals its answer without KeepUnknowns
// (pulumi-go-provider integration/fake/monitor.go RegisterResource), so
// the SDK would refuse it ("malformed RPC secret: missing value"), where
// it drops a plain unknown. The engine's monitor keeps unknowns.
func (r *recorder) newResource(args integration.MockResourceArgs) (string, property.Map, error) {
	id, out, err := r.answer(args)
	return id, withoutUnknownSecrets(out), err
}

func withoutUnknownSecrets(m property.Map) property.Map {
	out := map[string]property.Value{}
	m.AllStable(func(k string, v property.Value) bool {
		if !(v.Secret() && v.IsComputed()) {
			out[k] = v
		}
		return true
	})
	return property.NewMap(out)
}

func (r *recorder) answer(args integration.MockResourceArgs) (string, property.Map, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !args.Custom {
		return args.Name, args.Inputs, nil // the component itself
	}
	reg := registration{typ: string(args.TypeToken.Name()), name: args.Name, inputs: args.Inputs}
	if rpc := args.RegisterRPC; rpc != nil {
		for _, d := range rpc.GetDependencies() {
			reg.deps = append(reg.deps, shortURN(d))
		}
		reg.ignore = rpc.GetIgnoreChanges()
		for _, f := range rpc.GetStackTrace().GetFrames() {
			reg.stack = append(reg.stack, f.GetPc().GetUri())
		}
		slices.Sort(reg.deps)
	}
	out := args.Inputs.AsMap()
	defer func() { reg.outputs = property.NewMap(out); r.regs = append(r.regs, reg) }()
	switch args.TypeToken {
	case tokenVirtualMachine:
		// a VM keeps its VMID from one construct to the next, as in
		// Proxmox (observedFrom reports it)
		out["vmId"] = property.New(float64(vmidOf(args.Name)))
		out["smbiosUuid"] = property.New("uuid-" + args.Name)
	case tokenDownloadFile:
		out["volumeId"] = property.New(args.Inputs.Get("storage").AsString() + ":iso/" + args.Inputs.Get("fileName").AsString())
	case tokenMachineSecrets:
		out["machineSecrets"] = property.New(bundleYAML()).WithSecret(true)
		out["clientConfiguration"] = property.New(property.NewMap(map[string]property.Value{
			// the bundle's, which the nodes' configurations trust
			"caCertificate":     property.New(string(testBundle().Certs.OS.Crt)),
			"clientCertificate": property.New("cert-pem"),
			"clientKey":         property.New("key-pem"),
		})).WithSecret(true)
	case tokenConfigurationApply:
		out["configDigest"] = property.New("digest-" + args.Name)
		out["runningVersion"] = property.New("v1.12.5")
	case tokenKubeconfig:
		out["kubeconfig"] = property.New("apiVersion: v1\nkind: Config\n").WithSecret(true)
	case tokenClusterHealth:
		out["nodes"] = property.New(property.NewMap(nil))
	}
	return args.Name + "-id", property.NewMap(out), nil
}

func (r *recorder) byType(typ string) []registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []registration
	for _, reg := range r.regs {
		if reg.typ == typ {
			out = append(out, reg)
		}
	}
	return out
}

func (r *recorder) get(t *testing.T, typ, name string) registration {
	t.Helper()
	for _, reg := range r.byType(typ) {
		if reg.name == name {
			return reg
		}
	}
	t.Fatalf("no %s %q registered; registered: %v", typ, name, r.keys())
	return registration{}
}

func (r *recorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, reg := range r.regs {
		out = append(out, reg.key())
	}
	slices.Sort(out)
	return out
}

// runningConfigs answers for the nodes' running configurations by address
// (a missing address does not answer).
type runningConfigs map[string]string

func (r runningConfigs) read(_ context.Context, node string, _ *talosapi.Credentials) (runningNode, error) {
	c, ok := r[node]
	if !ok {
		return runningNode{}, fmt.Errorf("dial tcp %s:50000: i/o timeout", node)
	}
	// The node runs the version its installer image names (what it
	// installed or was last upgraded to).
	image, err := talosapi.ConfigInstallImage([]byte(c))
	if err != nil {
		return runningNode{}, err
	}
	v, _ := talosapi.ImageVersion(image)
	return runningNode{Config: c, TalosVersion: v}, nil
}

// members are the nodes the cluster knows: those that run a
// configuration, by the hostname it sets.
func (r runningConfigs) members(context.Context, []string, *talosapi.Credentials) (map[string]string, error) {
	out := map[string]string{}
	for addr, c := range r {
		if name := talosapi.ConfigNodename([]byte(c)); name != "" {
			out[name] = addr
		}
	}
	return out, nil
}

// appliedConfigs are the configurations a construct gave the nodes, by
// address: what they run after an up.
func appliedConfigs(rec *recorder) runningConfigs {
	out := runningConfigs{}
	for _, a := range rec.byType("ConfigurationApply") {
		out[a.inputs.Get("node").AsString()] = a.inputs.Get("machineConfiguration").AsString()
	}
	return out
}

// construct runs the component's Construct against mocks; the nodes run
// the configurations in running.
func construct(t *testing.T, inv Inventory, inputs map[string]any, running ...runningConfigs) (*recorder, p.ConstructResponse, error) {
	t.Helper()
	return constructDry(t, false, inv, inputs, running...)
}

// existingCluster builds a cluster from inputs on three hosts and returns
// an inventory that reports its VMs, as Proxmox does on the next run.
func existingCluster(t *testing.T, inputs map[string]any) (*fakeInventory, *recorder) {
	t.Helper()
	inv := &fakeInventory{hosts: threeHosts()}
	first, _, err := construct(t, inv, inputs)
	must(t, err)
	inv.vms = observedFrom(t, first)
	return inv, first
}

// constructDry is construct in a preview (dryRun) or an update: a preview
// passes unknown inputs on as unknown, an update drops them.
func constructDry(t *testing.T, dryRun bool, inv Inventory, inputs map[string]any, running ...runningConfigs) (*recorder, p.ConstructResponse, error) {
	t.Helper()
	nodes := runningConfigs{}
	for _, r := range running {
		maps.Copy(nodes, r)
	}
	return constructKnown(t, dryRun, inv, inputs, nodes, nodes.members)
}

// constructKnown is constructDry with the cluster's own view of its nodes
// (Kubernetes Node objects, etcd members) given apart from what answers.
func constructKnown(t *testing.T, dryRun bool, inv Inventory, inputs map[string]any, nodes runningConfigs, members membersReader) (*recorder, p.ConstructResponse, error) {
	t.Helper()
	return constructReading(t, dryRun, inv, inputs, nodes.read, members)
}

// constructReading is constructKnown with the reader of the nodes' running
// configurations given as is (a test that counts what is asked).
func constructReading(t *testing.T, dryRun bool, inv Inventory, inputs map[string]any, read configReader, members membersReader) (*recorder, p.ConstructResponse, error) {
	t.Helper()
	return constructWith(t, &Component{
		inventory:   func(context.Context) (Inventory, error) { return inv, nil },
		readConfig:  read,
		readMembers: members,
		extensions:  labFactoryExtensions(t),
		offline:     func() bool { return false },
	}, dryRun, inputs)
}

// constructWith runs c's Construct against mocks.
func constructWith(t *testing.T, c *Component, dryRun bool, inputs map[string]any) (*recorder, p.ConstructResponse, error) {
	t.Helper()
	rec := &recorder{}
	prov, err := infer.NewProviderBuilder().
		WithComponents(infer.Component[*Component, TalosClusterArgs, *TalosCluster](c)).
		WithModuleMap(map[tokens.ModuleName]tokens.ModuleName{"cluster": "index"}).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	s, err := integration.NewServer(t.Context(), "proxmoxtalos", semver.MustParse("0.1.0"),
		integration.WithProvider(WithPlainInputs(prov)),
		integration.WithMocks(&integration.MockResourceMonitor{NewResourceF: rec.newResource}))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Construct(p.ConstructRequest{
		DryRun: dryRun,
		Urn:    presource.URN("urn:pulumi:test::proj::" + tokenComponent + "::lab"),
		Inputs: presource.FromResourcePropertyMap(presource.NewPropertyMapFromMap(inputs)),
	})
	return rec, resp, err
}

// baseInputs is a 3 control plane + 2 worker cluster with a VIP.
func baseInputs() map[string]any {
	return map[string]any{
		"clusterName": "lab",
		"hosts":       []any{map[string]any{"node": "pve1"}, map[string]any{"node": "pve2"}, map[string]any{"node": "pve3"}},
		"network": map[string]any{
			"subnet":       "10.0.0.0/24",
			"gateway":      "10.0.0.1",
			"addressRange": map[string]any{"start": "10.0.0.10", "end": "10.0.0.50"},
			"dnsServers":   []any{"10.0.0.1"},
		},
		"vip":         "10.0.0.5",
		"workerPools": []any{map[string]any{"name": "workers", "count": 2}},
		// Pinned, so the tests do not move with the default release (the
		// default itself is tested in provider/plan).
		"talosVersion":      "v1.12.5",
		"kubernetesVersion": "v1.35.2",
	}
}

// unversioned is baseInputs of a program that names no versions.
func unversioned() map[string]any {
	in := baseInputs()
	delete(in, "talosVersion")
	delete(in, "kubernetesVersion")
	return in
}

// observedFrom renders the VMs a construct registered as Proxmox would
// show them once created (what the VirtualMachine resource writes).
func observedFrom(t *testing.T, rec *recorder) []plan.ObservedVM {
	t.Helper()
	var out []plan.ObservedVM
	for _, reg := range rec.byType("VirtualMachine") {
		in := reg.inputs
		vm := plan.ObservedVM{
			VMID: int(reg.outputs.Get("vmId").AsNumber()), Host: in.Get("node").AsString(), Name: in.Get("name").AsString(), Status: "running",
			Cores:     int(in.Get("cpu").AsMap().Get("cores").AsNumber()),
			Sockets:   int(in.Get("cpu").AsMap().Get("sockets").AsNumber()),
			CPUType:   in.Get("cpu").AsMap().Get("type").AsString(),
			MemoryMiB: int(in.Get("memory").AsMap().Get("dedicated").AsNumber()),
			OnBoot:    in.Get("onBoot").AsBool(),
			Agent:     in.Get("agent").AsMap().Get("enabled").AsBool(),
		}
		for _, tag := range in.Get("tags").AsArray().AsSlice() {
			vm.Tags = append(vm.Tags, tag.AsString())
		}
		slices.Sort(vm.Tags) // Proxmox sorts tags
		for _, d := range in.Get("disks").AsArray().AsSlice() {
			dm := d.AsMap()
			vm.Disks = append(vm.Disks, plan.Disk{Interface: dm.Get("interface").AsString(), Storage: dm.Get("storage").AsString(), SizeGiB: int(dm.Get("size").AsNumber())})
		}
		if iso := in.Get("iso"); iso.IsString() {
			vm.ISOStorage, _, _ = strings.Cut(iso.AsString(), ":")
			vm.ISOVolume = iso.AsString()
		}
		ci := in.Get("cloudInit").AsMap()
		ips := ci.Get("ipConfigs").AsArray().AsSlice()
		for j, n := range in.Get("networkDevices").AsArray().AsSlice() {
			nm := n.AsMap()
			nic := plan.NICConfig{Bridge: nm.Get("bridge").AsString(), MAC: nm.Get("macAddress").AsString()}
			if v := nm.Get("vlanId"); v.IsNumber() {
				nic.VLAN = int(v.AsNumber())
			}
			if v := nm.Get("mtu"); v.IsNumber() {
				nic.MTU = int(v.AsNumber())
			}
			ipv4 := ips[j].AsMap().Get("ipv4").AsMap()
			if a := ipv4.Get("address").AsString(); a != "dhcp" {
				nic.Address = a
				if g := ipv4.Get("gateway"); g.IsString() {
					nic.Gateway = g.AsString()
				}
			}
			vm.NICs = append(vm.NICs, nic)
		}
		if dns := ci.Get("dns"); dns.IsMap() {
			for _, s := range dns.AsMap().Get("servers").AsArray().AsSlice() {
				vm.DNSServers = append(vm.DNSServers, s.AsString())
			}
			if d := dns.AsMap().Get("domain"); d.IsString() {
				vm.SearchDomain = d.AsString()
			}
		}
		out = append(out, vm)
	}
	return out
}

func depends(reg registration, key string) bool { return slices.Contains(reg.deps, key) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
