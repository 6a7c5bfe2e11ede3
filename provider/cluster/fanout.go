package cluster

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// fanout registers the plan's resources.
//
// Order and dependencies carry the rollout rules, for creation, updates and
// removals alike (Pulumi deletes a resource before what it depends on):
//
//   - Control planes form one chain: each node's ConfigurationApply waits for
//     the previous control plane, so they are configured, upgraded and
//     removed one at a time (removal in reverse: the highest first, each
//     leaving etcd before the next).
//   - A node that already exists is also gated: its VM waits for the
//     previous node's health gate, and its own gate (a ClusterHealth that
//     re-checks when the node's configuration, version or VM changes) comes
//     after its apply. So upgrades, reboots and restarts roll one node at a
//     time, control planes first, each followed by a health check.
//   - New nodes are not gated on each other (their VMs are created in
//     parallel; new workers are configured in parallel after the control
//     planes); their gates wait for the cluster's final health check, so
//     that the next update finds them in place.
//   - Workers depend on the last control plane, so they leave first.
type fanout struct {
	ctx         *pulumi.Context
	comp        *TalosCluster
	name        string
	plan        *plan.Plan
	state       *plan.State
	planner     *planner
	tokenSecret pulumi.StringInput

	secrets *machineSecrets
	configs pulumi.StringMapOutput
	isos    map[string]*downloadFile
	vms     map[string]*virtualMachine
	applies map[string]*configurationApply
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
	f.isos, f.vms, f.applies = map[string]*downloadFile{}, map[string]*virtualMachine{}, map[string]*configurationApply{}

	f.secrets = &machineSecrets{}
	if err := f.ctx.RegisterResource(tokenMachineSecrets, f.name+"-secrets", pulumi.Map{
		"talosVersion": pulumi.String(p.Cluster.TalosVersion),
	}, f.secrets, f.parent()...); err != nil {
		return err
	}
	f.configs = f.machineConfigs()

	for _, d := range p.ISOs {
		iso := &downloadFile{}
		if err := f.ctx.RegisterResource(tokenDownloadFile, f.name+"-iso-"+d.Host, downloadProps(&p.Cluster, d), iso, f.parent()...); err != nil {
			return err
		}
		f.isos[d.Host] = iso
	}

	nodes := map[string]*plan.Node{}
	for i := range p.Nodes {
		nodes[p.Nodes[i].Name] = &p.Nodes[i]
	}
	states := map[string]*plan.NodeState{}
	for i := range f.state.Nodes {
		states[f.state.Nodes[i].Name] = &f.state.Nodes[i]
	}

	var (
		cpLink pulumi.Resource // the last control plane: its gate, or its apply when new
		chain  pulumi.Resource // the last existing node's gate
		newish []string        // nodes whose gates wait for the final health check
		head   = ""
	)
	gates := map[string]pulumi.Map{}
	for _, nodeName := range p.Rollout {
		n := nodes[nodeName]
		if head == "" {
			head = n.Name
		}
		var vmDeps []pulumi.Resource
		if n.Existing {
			vmDeps = append(vmDeps, chain)
		}
		vm, err := f.vm(n, vmDeps)
		if err != nil {
			return err
		}
		applyDeps := []pulumi.Resource{vm, cpLink}
		if n.Existing && n.Role == plan.RoleWorker {
			applyDeps = append(applyDeps, chain)
		}
		apply, err := f.apply(n, n.Name != head, applyDeps)
		if err != nil {
			return err
		}
		if n.Name == p.Bootstrap {
			if err := f.bootstrap(apply); err != nil {
				return err
			}
		}
		gateProps := f.healthProps(pulumi.StringArray{apply.ConfigDigest, apply.RunningVersion, pulumi.String(vmTrigger(states[n.Name]))})
		var link pulumi.Resource = apply
		if n.Existing {
			gate := &clusterHealth{}
			if err := f.ctx.RegisterResource(tokenClusterHealth, n.Name, gateProps, gate, f.parent(apply, f.kube)...); err != nil {
				return err
			}
			link, chain = gate, gate
		} else {
			gates[n.Name] = gateProps
			newish = append(newish, n.Name)
		}
		if n.Role == plan.RoleControlPlane {
			cpLink = link
		}
	}
	if f.kube == nil {
		return fmt.Errorf("plan has no bootstrap node %q among its control planes", p.Bootstrap)
	}

	// The final check: every node healthy, the API answering on the
	// endpoint (the VIP, once elected).
	var triggers pulumi.StringArray
	var all []pulumi.Resource
	for _, nodeName := range p.Rollout {
		a := f.applies[nodeName]
		triggers = append(triggers, a.ConfigDigest, a.RunningVersion, pulumi.String(vmTrigger(states[nodeName])))
		all = append(all, a)
	}
	f.health = &clusterHealth{}
	if err := f.ctx.RegisterResource(tokenClusterHealth, f.name+"-healthy", f.healthProps(triggers), f.health, f.parent(append(all, f.kube)...)...); err != nil {
		return err
	}
	for _, nodeName := range newish {
		if err := f.ctx.RegisterResource(tokenClusterHealth, nodeName, gates[nodeName], &clusterHealth{}, f.parent(f.health, f.kube)...); err != nil {
			return err
		}
	}
	f.outputs()
	return nil
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
		return machineConfigs(p, secretsYAML)
	}
	var out pulumi.StringMapOutput
	if f.tokenSecret == nil {
		out = f.secrets.MachineSecrets.ApplyT(func(s string) (map[string]string, error) { return gen(s, "") }).(pulumi.StringMapOutput)
	} else {
		out = pulumi.All(f.secrets.MachineSecrets, f.tokenSecret).ApplyT(func(v []any) (map[string]string, error) {
			return gen(v[0].(string), v[1].(string))
		}).(pulumi.StringMapOutput)
	}
	return pulumi.ToSecret(out).(pulumi.StringMapOutput)
}

func (f *fanout) vm(n *plan.Node, deps []pulumi.Resource) (*virtualMachine, error) {
	var iso pulumi.StringInput
	if d := f.isos[n.VM.Host]; d != nil {
		iso = d.VolumeID
	}
	vm := &virtualMachine{}
	if err := f.ctx.RegisterResource(tokenVirtualMachine, n.Name, vmProps(f.plan.Cluster.Name, n, iso), vm, f.parent(deps...)...); err != nil {
		return nil, err
	}
	f.vms[n.Name] = vm
	return vm, nil
}

// apply registers a node's ConfigurationApply. Removing it resets the node:
// gracefully (leave etcd, drain) except on the head of the control plane
// chain, which is removed last, when the cluster is destroyed: etcd cannot
// shrink below one member, so the last control plane is reset without
// leaving (as `talosctl reset --graceful=false` on a single node).
func (f *fanout) apply(n *plan.Node, graceful bool, deps []pulumi.Resource) (*configurationApply, error) {
	a := &configurationApply{}
	props := pulumi.Map{
		"node":                 pulumi.String(addressOf(n)),
		"clientConfiguration":  f.secrets.ClientConfiguration,
		"machineConfiguration": f.configs.MapIndex(pulumi.String(n.Name)),
		"reset": pulumi.Map{
			"enabled":  pulumi.Bool(true),
			"graceful": pulumi.Bool(graceful),
		},
	}
	if err := f.ctx.RegisterResource(tokenConfigurationApply, n.Name, props, a, f.parent(deps...)...); err != nil {
		return nil, err
	}
	f.applies[n.Name] = a
	return a, nil
}

// bootstrap registers the etcd bootstrap on the first control plane's own
// address and the kubeconfig, which points at the cluster endpoint.
func (f *fanout) bootstrap(apply *configurationApply) error {
	ep := f.plan.Endpoints
	b := &bootstrap{}
	if err := f.ctx.RegisterResource(tokenBootstrap, f.name, pulumi.Map{
		"node":                pulumi.String(ep.Bootstrap),
		"clientConfiguration": f.secrets.ClientConfiguration,
	}, b, f.parent(apply)...); err != nil {
		return err
	}
	f.kube = &kubeconfig{}
	return f.ctx.RegisterResource(tokenKubeconfig, f.name, pulumi.Map{
		"node":                pulumi.String(ep.Bootstrap),
		"clientConfiguration": f.secrets.ClientConfiguration,
		"kubernetesEndpoint":  pulumi.String(ep.Kubernetes),
	}, f.kube, f.parent(b)...)
}

func (f *fanout) healthProps(triggers pulumi.StringArray) pulumi.Map {
	var cps, workers []string
	for i := range f.plan.Nodes {
		n := &f.plan.Nodes[i]
		if n.Role == plan.RoleControlPlane {
			cps = append(cps, addressOf(n))
		} else {
			workers = append(workers, addressOf(n))
		}
	}
	m := pulumi.Map{
		"controlPlanes":       pulumi.ToStringArray(cps),
		"clientConfiguration": f.secrets.ClientConfiguration,
		"kubeconfig":          f.kube.Kubeconfig,
		"kubernetesEndpoint":  pulumi.String(f.plan.Endpoints.Kubernetes),
		"triggers":            triggers,
	}
	if len(workers) > 0 {
		m["workers"] = pulumi.ToStringArray(workers)
	}
	// Removed nodes leave after the checks (Pulumi deletes last).
	var leaving []string
	for _, r := range f.plan.Removed {
		leaving = append(leaving, r.Address)
	}
	if len(leaving) > 0 {
		m["leaving"] = pulumi.ToStringArray(leaving)
	}
	return m
}

func (f *fanout) outputs() {
	p := f.plan
	c := f.comp
	c.MachineSecrets = pulumi.ToSecret(f.secrets.MachineSecrets).(pulumi.StringOutput)
	c.Kubeconfig = pulumi.ToSecret(pulumi.All(f.kube.Kubeconfig, f.health.ID()).ApplyT(func(v []any) string {
		return v[0].(string)
	})).(pulumi.StringOutput)

	var nodeNames, addrs []string
	for i := range p.Nodes {
		nodeNames = append(nodeNames, p.Nodes[i].Name)
		addrs = append(addrs, addressOf(&p.Nodes[i]))
	}
	c.Talosconfig = pulumi.ToSecret(f.secrets.ClientConfiguration.ApplyT(func(cc map[string]string) (string, error) {
		return talosconfig.ClientConfiguration(p.Cluster.Name, p.Endpoints.Talos, addrs,
			[]byte(cc["caCertificate"]), talosconfig.ClientCertificate{CertPEM: []byte(cc["clientCertificate"]), KeyPEM: []byte(cc["clientKey"])})
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
func addressOf(n *plan.Node) string {
	a := n.VM.NICs[0].Address
	for i := 0; i < len(a); i++ {
		if a[i] == '/' {
			return a[:i]
		}
	}
	return a
}
