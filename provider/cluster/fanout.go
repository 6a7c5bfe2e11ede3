package cluster

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// fanout registers the plan's resources.
//
// Order and dependencies carry the rollout rules for creation, updates and
// removals alike (Pulumi deletes a resource before what it depends on). The
// plan decides what each node's steps wait for (plan.Waits); this layer
// wires it:
//
//   - A new cluster (plan.Waits.WithCluster) comes up as talosctl users
//     bring one up: each apply gives its node the configuration and
//     returns (healthGate.clusterCreate), the bootstrap waits for the
//     first control plane, and the final ClusterHealth for every node.
//     The chains below still order the applies, for a later destroy.
//   - Every node's ConfigurationApply has a health gate: an update that
//     changes the node waits until the nodes before it in rollout order
//     (control planes first) are healthy, changes it, and waits until they
//     are healthy with it; the others, which may not be configured yet, are
//     tolerated. A create waits only before. A VM restart (new hardware)
//     re-checks through the gate's vm settings.
//   - Control planes form one chain: each one's apply waits for the
//     previous one's. So they are installed, joined to etcd, upgraded and
//     rebooted one at a time, each gated on health, and removed in reverse
//     order (the highest first, each leaving etcd before the next).
//   - Workers whose VM exists chain the same way after the control planes.
//     Workers whose VM is new are configured in parallel once the control
//     planes are: a pool of new workers need not wait for each other.
//   - The VM of a node whose VM runs waits for the previous node's apply,
//     so that changes restarting VMs roll one at a time too. A VM that is
//     new, stopped or missing waits for nothing: no wait may depend on the
//     node it would bring up, so a stopped VM is started by the next up.
//   - Kubernetes upgrades go in two phases (componentStages): every control
//     plane's components, one node at a time, then, through the applies,
//     the kubelets. Every apply waits for the last component stage.
//   - Workers depend on the control planes, so they leave first.
//   - A node none of whose steps would change anything (settledNodes,
//     from the providers' own conditions; plan.Waits.AsCreated) is
//     registered as its cluster's create registered it: equal to its
//     state, its steps make the Pulumi CLI write nothing (plan.Settle).
//     The nodes that change wait for the last one before them that
//     changes (plan.Waits.After), and so do a settled node's apply and a
//     settled worker's VM.
//   - One cluster-level ClusterHealth, after every node, gates the
//     kubeconfig output: the API answers on the endpoint (the VIP, once
//     elected). When the update starts VMs that were down, it checks again.
type fanout struct {
	ctx         *pulumi.Context
	comp        *TalosCluster
	name        string
	plan        *plan.Plan
	state       *plan.State
	planner     *planner
	tokenSecret pulumi.StringInput
	// sensitive are the texts of the secret inputs (acceptSecretInputs):
	// each ConfigurationApply shows them as sensitive in its view.
	sensitive []string
	// unknownInputs are inputs the configurations need that are not
	// known in this preview (acceptInputValues).
	unknownInputs []string
	// vmUnknown are the VM settings not known in this preview
	// (vm_inputs.go): unknown in every VM's inputs.
	vmUnknown vmUnknowns
	// readings are what the existing nodes run, read before planning.
	readings map[string]nodeReading
	// observed are the cluster's VMs as Proxmox showed them before
	// planning, and stack reads the stack's last state (settledNodes).
	observed  []plan.ObservedVM
	stack     stateReader
	onlyLayer string // Component.onlyLayer
	// Image Factory settings of the inputs, for the schematic.
	factoryURL, installerRegistry string
	skipRegistration              bool

	secrets *machineSecrets
	// generated are the configurations Construct's check made with the
	// cluster's own secrets (nil for a new cluster).
	generated *generated
	schematic *schematic
	configs   pulumi.StringMapOutput
	// base is the plan's own summary; summaryOut adds what the machine
	// configuration changes do, learned from the nodes before any of them
	// is touched (the applies' configurations wait for it).
	base       plan.Summary
	summaryOut pulumi.StringOutput
	// isos by host and volume ID.
	isos    map[string]*downloadFile
	vms     map[string]*virtualMachine
	applies map[string]*configurationApply
	boot    *bootstrap
	kube    *kubeconfig
	health  *clusterHealth
}

func (f *fanout) parent(deps ...pulumi.Resource) []pulumi.ResourceOption {
	opts := []pulumi.ResourceOption{pulumi.Parent(f.comp)}
	var real []pulumi.Resource
	for _, d := range deps {
		if d != nil {
			real = append(real, d)
		}
	}
	if len(real) > 0 {
		opts = append(opts, pulumi.DependsOn(real))
	}
	return opts
}

func (f *fanout) register() error {
	p := f.plan
	// Nodes none of whose steps would change anything register as the
	// create did, so that a no-op preview right after it finds every step
	// equal to its state (plan.Settle).
	p.Settle(f.settledNodes())
	f.isos, f.vms, f.applies = map[string]*downloadFile{}, map[string]*virtualMachine{}, map[string]*configurationApply{}

	if f.secrets == nil {
		var err error
		if f.secrets, err = registerSecrets(f.ctx, f.name, f.comp, p.Cluster.TalosVersion); err != nil {
			return err
		}
	}
	f.configs = f.machineConfigs()
	f.summaryOut = f.summary()
	configs := pulumi.All(f.configs, f.summaryOut).ApplyT(func(v []any) map[string]string {
		return v[0].(map[string]string)
	})
	if len(f.unknownInputs) == 0 {
		configs = pulumi.ToSecret(configs)
	}
	f.configs = configs.(pulumi.StringMapOutput)

	// The factory builds the ISO and the installer image only for a
	// schematic it knows: register it before anything downloads or
	// installs from it.
	f.schematic = &schematic{}
	if err := registerChild(f.ctx, f.name+"-schematic", f.schematicArgs(), nil, f.schematic, f.parent()...); err != nil {
		return err
	}

	for _, d := range p.ISOs {
		iso := &downloadFile{}
		// A file is what its name says (version, schematic): where it
		// came from does not change it, so a new factory URL or mirror
		// applies to new downloads only, and an ISO kept for its nodes
		// keeps the URL it was downloaded from (plan.ISODownload.URLKnown).
		args := downloadArgs(d)
		opts := append(f.parent(f.schematic), pulumi.IgnoreChanges([]string{childargs.Name(args, &args.URL)}))
		if err := registerChild(f.ctx, isoResourceName(f.name, d), args, nil, iso, opts...); err != nil {
			return err
		}
		f.isos[d.Host+"|"+d.VolumeID()] = iso
	}

	nodes := map[string]*plan.Node{}
	for i := range p.Nodes {
		nodes[p.Nodes[i].Name] = &p.Nodes[i]
	}
	states := map[string]*plan.NodeState{}
	for i := range f.state.Nodes {
		states[f.state.Nodes[i].Name] = &f.state.Nodes[i]
	}

	// Kubernetes upgrades move every control plane's components before any
	// kubelet: the component stages run first, and every apply waits for
	// the last one.
	lastStage, err := f.componentStages(nodes)
	if err != nil {
		return err
	}

	var applies []pulumi.Resource
	for i, nodeName := range p.Rollout {
		n := nodes[nodeName]
		vm := f.vms[n.Name] // VMs a stage waits for are registered with it
		if vm == nil {
			deps := []pulumi.Resource{f.applyOf(n.Waits.VM)}
			if n.Waits.AfterControlPlaneVMs {
				deps = append(deps, f.controlPlaneVMs()...)
			}
			if vm, err = f.vm(n, deps...); err != nil {
				return err
			}
		}
		// In a cluster that exists, every node but the first joins a
		// bootstrapped cluster: its gate checks the nodes before it
		// through etcd and Kubernetes. A new cluster's nodes come up
		// together (plan.Waits.WithCluster).
		deps := []pulumi.Resource{vm, f.applyOf(n.Waits.Apply), f.applyOf(n.Waits.After), f.schematic}
		if n.Waits.AfterStages {
			deps = append(deps, lastStage)
		}
		if n.Waits.AfterBootstrap && f.boot != nil {
			deps = append(deps, f.boot)
		}
		required := f.required(i, nodes)
		apply, err := f.apply(n, i > 0, f.gateArgs(n, required, states[n.Name]), required, deps)
		if err != nil {
			return err
		}
		if n.Name == p.Bootstrap {
			if err := f.bootstrap(apply); err != nil {
				return err
			}
		}
		if f.kube == nil {
			return fmt.Errorf("plan bootstraps %q, which is not the first control plane of the rollout", p.Bootstrap)
		}
		applies = append(applies, apply)
	}

	// The final check: every node healthy, the API answering on the
	// endpoint (the VIP, once elected). The kubeconfig output waits for it.
	f.health = &clusterHealth{}
	health, binds := f.healthArgs()
	if err := registerChild(f.ctx, f.name+"-healthy", health, binds, f.health, f.parent(append(applies, f.kube)...)...); err != nil {
		return err
	}
	f.outputs()
	return nil
}

// controlPlaneVMs are the control planes' VMs registered so far: all of
// them once the rollout reaches the workers.
func (f *fanout) controlPlaneVMs() []pulumi.Resource {
	var out []pulumi.Resource
	for i := range f.plan.Nodes {
		if n := &f.plan.Nodes[i]; n.Role == plan.RoleControlPlane && f.vms[n.Name] != nil {
			out = append(out, f.vms[n.Name])
		}
	}
	return out
}

// newWorker is a worker whose VM does not exist yet: new workers are
// configured in parallel.
func newWorker(n *plan.Node) bool { return n.Role == plan.RoleWorker && !n.Existing }

// applyOf is the named node's apply, nil for "" (a Waits field that waits
// for nothing). The rollout registers a node's apply before any step that
// waits for it.
func (f *fanout) applyOf(name string) pulumi.Resource {
	if name == "" {
		return nil
	}
	return f.applies[name]
}

// schematicArgs register the plan's Image Factory schematic.
func (f *fanout) schematicArgs() *talos.ImageFactorySchematicArgs {
	c := &f.plan.Cluster
	return &talos.ImageFactorySchematicArgs{
		Extensions:        nonNil(c.Image.Extensions),
		KernelArgs:        nonNil(c.Image.KernelArgs),
		TalosVersion:      c.TalosVersion,
		Platform:          c.Image.Platform,
		FactoryUrl:        f.factoryURL,
		InstallerRegistry: f.installerRegistry,
		SkipRegistration:  f.skipRegistration,
	}
}

// machineConfigs generates every node's configuration from the secrets
// bundle (and the Proxmox CCM token secret), as one secret map output.
func (f *fanout) machineConfigs() pulumi.StringMapOutput {
	gen := func(secretsYAML, token string) (map[string]string, error) {
		p := f.plan
		if token != "" {
			var err error
			if p, err = f.planner.compute(token); err != nil {
				return nil, err
			}
		}
		if cfgs, ok := f.generated.reuse(p, secretsYAML); ok {
			return cfgs, nil
		}
		return machineConfigs(p, secretsYAML)
	}
	var out pulumi.StringMapOutput
	if len(f.unknownInputs) > 0 {
		// A preview with an input the configurations need that another
		// resource's output gives (acceptInputValues): every node's
		// configuration changes once it is known.
		// Not wrapped as a secret here: an unknown value holds nothing (the
		// ConfigurationApply input is secret anyway: childargs.Map).
		return pulumi.UnsafeUnknownOutput(nil).ApplyT(func(any) map[string]string { return nil }).(pulumi.StringMapOutput)
	}
	if f.tokenSecret == nil {
		out = f.secrets.MachineSecrets.ApplyT(func(s string) (map[string]string, error) { return gen(s, "") }).(pulumi.StringMapOutput)
	} else {
		out = pulumi.All(f.secrets.MachineSecrets, f.tokenSecret).ApplyT(func(v []any) (map[string]string, error) {
			return gen(v[0].(string), v[1].(string))
		}).(pulumi.StringMapOutput)
	}
	return pulumi.ToSecret(out).(pulumi.StringMapOutput)
}

func (f *fanout) vm(n *plan.Node, deps ...pulumi.Resource) (*virtualMachine, error) {
	vm := &virtualMachine{}
	args := vmArgs(f.plan.Cluster.Name, n)
	binds := unknownSettings(args, f.vmUnknown)
	if b := n.VM.Boot; b.ISOFile != "" && args.Clone == nil {
		if d := f.isos[n.VM.Host+"|"+plan.ISOVolumeID(b.ISOStorage, b.ISOFile)]; d != nil {
			binds = append(binds, childargs.BindPtr(&args.ISO, d.VolumeID))
		}
	}
	opts := f.parent(deps...)
	if n.Existing {
		// A template is what new nodes are cloned from: an existing VM is
		// installed and stays (plan.checkReplacements). Proxmox does not
		// say what a VM was cloned from, so the plan cannot tell a new
		// template from the old one: the VM keeps its recorded source.
		opts = append(opts, pulumi.IgnoreChanges([]string{childargs.Name(args, &args.Clone)}))
	}
	if err := registerChild(f.ctx, n.Name, args, binds, vm, opts...); err != nil {
		return nil, err
	}
	f.vms[n.Name] = vm
	return vm, nil
}

// apply registers a node's ConfigurationApply. Removing it resets the node:
// gracefully (cordon and drain, leave etcd) except on the head of the
// control plane chain, which is removed last, when the cluster is
// destroyed: etcd cannot shrink below one member, so the last control plane
// is reset without leaving (as `talosctl reset --graceful=false` on a
// single node). After the reset the node's Kubernetes Node object, which
// Talos leaves behind, is deleted through the head's Kubernetes API; the
// head itself has no one left to ask. Only the head is named (not every
// control plane) so that scaling the control planes does not touch every
// node's inputs; it is the last node to go.
func (f *fanout) apply(n *plan.Node, graceful bool, gate *talos.HealthGate, required []string, deps []pulumi.Resource) (*configurationApply, error) {
	a := &configurationApply{}
	args := &talos.ConfigurationApplyArgs{
		Node:       addressOf(n),
		Reset:      &talos.ResetOnDelete{Enabled: ptr(true), Graceful: ptr(graceful)},
		HealthGate: gate,
		// a secret input, as its provider:"secret" tag makes every value
		// childargs.Map registers
		SensitiveValues: f.sensitive,
	}
	if n.Name != f.plan.Bootstrap {
		args.Reset.ControlPlanes = []string{f.plan.Endpoints.Bootstrap}
	}
	binds := []childargs.Binding{
		childargs.Bind(&args.ClientConfiguration, f.secrets.ClientConfiguration),
		childargs.Bind(&args.MachineConfiguration, f.configs.MapIndex(pulumi.String(n.Name))),
	}
	if preview, ok := f.previewGateBindings(n, args, required); ok {
		binds = append(binds, preview...)
	} else {
		// Its waits (its own and the gate's) end early when a required
		// node's VM is stopped or gone, instead of at their timeout. Made
		// only here: the map awaits every required node's VMID (n² of them
		// over the rollout), for nothing in a preview that leaves it unknown.
		binds = append(binds, childargs.Bind(&args.VmIds, f.vmIDs(required)))
		binds = append(binds, f.previewTolerated(n, args)...)
	}
	// A replaced VM at the same address is another machine: the apply is
	// replaced and installs it from maintenance mode.
	if vm := f.vms[n.Name]; vm != nil {
		binds = append(binds, childargs.BindPtr(&args.MachineId, vm.SmbiosUUID))
	}
	if err := registerChild(f.ctx, n.Name, args, binds, a, f.parent(deps...)...); err != nil {
		return nil, err
	}
	f.applies[n.Name] = a
	return a, nil
}

// bootstrap registers the etcd bootstrap on the first control plane's own
// address and the kubeconfig, which points at the cluster endpoint.
func (f *fanout) bootstrap(apply *configurationApply) error {
	ep := f.plan.Endpoints
	f.boot = &bootstrap{}
	boot := &talos.BootstrapArgs{Node: ep.Bootstrap}
	first := f.vmIDs([]string{f.plan.Bootstrap})
	if err := registerChild(f.ctx, f.name, boot, []childargs.Binding{
		childargs.Bind(&boot.ClientConfiguration, f.secrets.ClientConfiguration),
		childargs.Bind(&boot.VmIds, first),
	}, f.boot, f.parent(apply)...); err != nil {
		return err
	}
	f.kube = &kubeconfig{}
	kube := &talos.KubeconfigArgs{Node: ep.Bootstrap, KubernetesEndpoint: ptr(ep.Kubernetes)}
	return registerChild(f.ctx, f.name, kube, []childargs.Binding{
		childargs.Bind(&kube.ClientConfiguration, f.secrets.ClientConfiguration),
		childargs.Bind(&kube.VmIds, first),
	}, f.kube, f.parent(f.boot)...)
}

// gateArgs are the health gate of node self: it requires the nodes
// required (f.required: those up to it in the rollout, except other new
// workers, configured in parallel), and tolerates the cluster's other
// nodes, those removed by this update included (Pulumi deletes them last).
func (f *fanout) gateArgs(self *plan.Node, required []string, st *plan.NodeState) *talos.HealthGate {
	s := f.split(required)
	gate := &talos.HealthGate{
		ControlPlanes: s.cps, Workers: s.workers, OtherNodes: s.others,
		KubernetesEndpoint: ptr(f.plan.Endpoints.Kubernetes),
		Vm:                 ptr(vmSettings(st)),
	}
	// A settled node's gate is the one its create sent (plan.Settle).
	if self.Existing && !self.Waits.AsCreated {
		gate.Workers, gate.OtherNodes = listed(s.workers), listed(s.others)
	}
	if self.Waits.WithCluster || self.Waits.AsCreated {
		gate.ClusterCreate = ptr(true)
	}
	return gate
}

// listed is an existing node's gate list as sent, empty rather than left
// out: a gate without the key is what ignoreChanges leaves of a stored one,
// which Check refuses when the last gate had one (provider/talos
// gate_lists_dropped.go). A new node has no last gate, and its create
// preview shows no empty lists.
func listed(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// required are the nodes the health gate of the node at position i of the
// rollout requires: the nodes up to it, except other new workers; for a
// settled worker, registered as created with its cluster, except every
// other worker.
func (f *fanout) required(i int, nodes map[string]*plan.Node) []string {
	rollout := f.plan.Rollout
	self := nodes[rollout[i]]
	var required []string
	for j := 0; j <= i; j++ {
		n := nodes[rollout[j]]
		if j != i && (newWorker(self) && newWorker(n) || self.Waits.AsCreated && n.Role == plan.RoleWorker) {
			continue
		}
		required = append(required, n.Name)
	}
	return required
}

// vmIDs are the named nodes' VMIDs by address (the vmIds input of the
// resources that wait for nodes). The VMs are registered before any
// resource that waits for their nodes, so this adds no dependency that the
// rollout does not have.
func (f *fanout) vmIDs(names []string) pulumi.IntMapOutput {
	m := pulumi.IntMap{}
	named := setOf(names)
	for i := range f.plan.Nodes {
		n := &f.plan.Nodes[i]
		if vm := f.vms[n.Name]; vm != nil && named[n.Name] {
			m[addressOf(n)] = vm.VMID
		}
	}
	return m.ToIntMapOutput()
}

// vmIDAddresses are the keys of vmIDs(names), known before the VMIDs are.
func (f *fanout) vmIDAddresses(names []string) []string {
	var out []string
	named := setOf(names)
	for i := range f.plan.Nodes {
		n := &f.plan.Nodes[i]
		if f.vms[n.Name] != nil && named[n.Name] {
			out = append(out, addressOf(n))
		}
	}
	return out
}

// setOf are names as a set: every gate looks up each node of the cluster in
// its required nodes, n² lookups over the rollout.
func setOf(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// nodeSets are the nodes' addresses a health check requires (control
// planes, workers) and the others it tolerates.
type nodeSets struct{ cps, workers, others []string }

// split sorts the nodes' addresses into required control planes and
// workers, and the others (nodes not required, removed nodes).
func (f *fanout) split(required []string) nodeSets {
	var s nodeSets
	req := setOf(required)
	for i := range f.plan.Nodes {
		n := &f.plan.Nodes[i]
		switch {
		case !req[n.Name]:
			s.others = append(s.others, addressOf(n))
		case n.Role == plan.RoleControlPlane:
			s.cps = append(s.cps, addressOf(n))
		default:
			s.workers = append(s.workers, addressOf(n))
		}
	}
	for _, r := range f.plan.Removed {
		s.others = append(s.others, r.Address)
	}
	return s
}

// healthProps are the inputs of the final health check: every node, the
// endpoint; the removed nodes are tolerated (Pulumi deletes them after).
func (f *fanout) healthArgs() (*talos.ClusterHealthArgs, []childargs.Binding) {
	s := f.split(f.plan.Rollout)
	h := &talos.ClusterHealthArgs{
		ControlPlanes: s.cps, Workers: s.workers, OtherNodes: s.others,
		KubernetesEndpoint: ptr(f.plan.Endpoints.Kubernetes),
		// A change (a Kubernetes upgrade) syncs the bootstrap manifests
		// once every node runs it, as talosctl upgrade-k8s does.
		KubernetesVersion: ptr(f.plan.Cluster.KubernetesVersion),
	}
	binds := []childargs.Binding{
		childargs.Bind(&h.ClientConfiguration, f.secrets.ClientConfiguration),
		childargs.BindPtr(&h.Kubeconfig, f.kube.Kubeconfig),
		childargs.Bind(&h.VmIds, f.vmIDs(f.plan.Rollout)),
		// So does a change of what the manifests are rendered from (an
		// inline manifest edited): Talos only creates missing objects.
		// Lines of names and short digests, no contents: not secret,
		// though the configurations they are read from are.
		childargs.Bind(&h.BootstrapManifests, pulumi.Unsecret(f.configs.ApplyT(func(cfgs map[string]string) ([]string, error) {
			return manifestInputs(f.plan, cfgs)
		})).(pulumi.StringArrayOutput)),
	}
	// Nodes that were down or lost their VM come back in this update
	// without a change the check would notice: it checks again, so that the
	// update reports a healthy cluster only once it saw one.
	var back []string
	for _, n := range append(f.plan.Down(), f.plan.Missing()...) {
		back = append(back, n.Name)
	}
	if len(back) > 0 {
		h.Recheck = ptr("VMs that were not running or missing: " + strings.Join(back, ", "))
	}
	return h, binds
}

func (f *fanout) outputs() {
	p := f.plan
	c := f.comp
	c.MachineSecrets = pulumi.ToSecret(f.secrets.MachineSecrets).(pulumi.StringOutput)
	c.Kubeconfig = pulumi.ToSecret(pulumi.All(f.kube.Kubeconfig, f.health.ID()).ApplyT(func(v []any) string {
		return v[0].(string)
	})).(pulumi.StringOutput)

	var nodeNames []string
	for i := range p.Nodes {
		nodeNames = append(nodeNames, p.Nodes[i].Name)
	}
	// One default node: talosctl refuses commands that need a single node
	// (kubeconfig) with several, and etcd commands need a control plane.
	c.Talosconfig = pulumi.ToSecret(pulumi.All(f.secrets.ClientConfiguration).ApplyT(func(v []any) (string, error) {
		cc := v[0].(talos.ClientConfiguration)
		return talosconfig.ClientConfiguration(p.Cluster.Name, p.Endpoints.Talos, []string{p.Endpoints.Bootstrap},
			[]byte(cc.CACertificate), talosconfig.ClientCertificate{CertPEM: []byte(cc.ClientCertificate), KeyPEM: []byte(cc.ClientKey)})
	})).(pulumi.StringOutput)

	var ids []any
	for _, name := range nodeNames {
		ids = append(ids, f.vms[name].VMID)
	}
	c.Nodes = pulumi.All(ids...).ApplyT(func(v []any) []ClusterNode {
		out := make([]ClusterNode, 0, len(p.Nodes))
		for i := range p.Nodes {
			n := &p.Nodes[i]
			out = append(out, ClusterNode{
				Name: n.Name, Role: NodeRole(n.Role), Pool: n.Pool, ProxmoxNode: n.VM.Host,
				VmId: v[i].(int), Address: addressOf(n), MacAddress: n.VM.NICs[0].MAC,
			})
		}
		return out
	}).(ClusterNodeArrayOutput)
}

// addressOf is a node's primary address without the prefix length.
func addressOf(n *plan.Node) string { return primaryAddress(n.VM.NICs) }

// primaryAddress is the first NIC's address without the prefix length, ""
// when there is none.
func primaryAddress(nics []plan.NICConfig) string {
	if len(nics) == 0 {
		return ""
	}
	a, _, _ := strings.Cut(nics[0].Address, "/")
	return a
}
