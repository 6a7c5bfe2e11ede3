// Package cluster is the Pulumi module `index`: the TalosCluster component.
// It reads what it needs from Proxmox (host capacity, the cluster's existing
// VMs), computes the plan (package plan) and fans it out into the Proxmox
// and Talos resources of this provider. The planning is pure and lives in
// package plan; this package only wires resources.
package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// Component constructs TalosCluster resources.
type Component struct {
	// inventory reads host capacity and the cluster's VMs; nil means the
	// provider's own Proxmox client. Tests set it.
	inventory func(ctx context.Context) (Inventory, error)
	// readConfig reads a node's running configuration; nil asks the node.
	readConfig configReader
	// readMembers asks control planes which nodes the cluster knows; nil
	// asks through the Talos API (talosapi.ReadMembers).
	readMembers membersReader
	// extensions asks the Image Factory about extensions; nil asks the
	// factory of the image input.
	extensions extensionChecker
	// countObjects counts objects of API resources on a control plane; nil
	// asks its Kubernetes API (talosapi.CountObjects).
	countObjects objectCounter
	// stack reads the stack's state, for an offline preview and for the
	// nodes it had when the cluster's members cannot be read; nil asks the
	// engine (offline.go).
	stack stateReader
	// offline reports the offline preview mode; nil is the provider's
	// configuration (config.Offline). Tests set it.
	offline func() bool
	// getenv reads the provider's environment (plan.EnvAddUnchecked); nil
	// is os.Getenv. Tests set it.
	getenv func(string) string
	// onlyLayer, for tests, decides settled nodes with one of the two
	// layers of settledNodes alone ("summary" or "providers"); "" is both.
	onlyLayer string
}

// Inventory is what the component reads from Proxmox before planning. It
// only reads, so previews may call it.
type Inventory interface {
	// Hosts returns every Proxmox node's capacity by name.
	Hosts(ctx context.Context) (map[string]plan.HostFacts, error)
	// VMs returns the VMs that carry the cluster's tag.
	VMs(ctx context.Context, cluster string) ([]plan.ObservedVM, error)
}

// Annotate documents the component.
func (c *Component) Annotate(a infer.Annotator) {
	a.SetToken("index", "TalosCluster")
	a.Describe(c, docs.Description("proxmoxtalos:index:TalosCluster"))
}

// Construct plans the cluster and registers its resources.
func (c *Component) Construct(ctx *pulumi.Context, name, typ string, args TalosClusterArgs, opts pulumi.ResourceOption) (*TalosCluster, error) {
	fail := func(err error) (*TalosCluster, error) { return nil, fmt.Errorf("TalosCluster %s: %w", name, err) }

	inv, read, offline, err := c.inventoryFor(ctx, name, args.ClusterName)
	if err != nil {
		return fail(err)
	}
	rctx := readContext(ctx)
	hosts, err := inv.Hosts(rctx)
	if err != nil {
		return fail(err)
	}
	vms, err := inv.VMs(rctx, args.ClusterName)
	if err != nil {
		return fail(err)
	}
	var guests map[int]plan.Guest
	if gl, ok := inv.(guestLister); ok && namesVMIDs(&args) {
		if guests, err = gl.Guests(ctx.Context()); err != nil {
			return fail(err)
		}
	}
	stackTag := plan.StackTag(ctx.Project(), ctx.Stack())
	if err := plan.CheckStack(args.ClusterName, stackTag, vms); err != nil {
		return nil, err // *plan.Error names the component already
	}
	prev, warnings := plan.Rebuild(args.ClusterName, vms)
	if len(prev.Nodes) == 0 {
		prev = nil
	}

	// An existing cluster: ask its nodes what they run before planning,
	// with the credentials of its secrets (registered first for that).
	var (
		comp     *TalosCluster
		secrets  *machineSecrets
		readings map[string]nodeReading
		known    plan.Membership
		creds    *talosapi.Credentials
	)
	if prev != nil {
		comp = &TalosCluster{}
		if err := ctx.RegisterComponentResource(typ, name, comp, opts); err != nil {
			return nil, err
		}
		var notes []string
		if secrets, creds, readings, known, notes, err = c.readRunningCluster(ctx, name, comp, &args, prev, read, offline != nil); err != nil {
			return fail(err)
		}
		warnings = append(warnings, notes...)
	}

	// Read in every run (a new cluster, an offline preview too): where it
	// has no effect, the plan says so.
	known.AddAnyway = c.addAnyway()

	unknownVM := unknownVMInputs(ctx.Context())
	vmUnknown := newVMUnknowns(unknownVM)
	if vmUnknown.any() {
		if !ctx.DryRun() {
			return fail(fmt.Errorf("%s %s not known in an update: the engine resolves a component's inputs before "+
				"constructing it, so this should not happen; run pulumi up again", strings.Join(unknownVM, ", "), isAre(len(unknownVM))))
		}
		fillUnknownNetwork(&args, vmUnknown, vms)
		hosts = withoutBridgeCheck(hosts, vmUnknown)
	}
	pl := &planner{args: &args, facts: plan.Facts{Hosts: hosts, Silent: silentNodes(readings), Membership: known, Guests: guests}, prev: prev, stackTag: stackTag}
	var tokenSecret pulumi.StringInput
	placeholder := ""
	if ccm := args.CloudControllerManager; ccm != nil && ccm.Proxmox != nil && ccm.Proxmox.TokenSecret != nil {
		tokenSecret, placeholder = ccm.Proxmox.TokenSecret, tokenSecretPlaceholder
	}
	p, err := planWithHostResources(ctx.Context(), pl, inv, placeholder, vmUnknown)
	if err != nil {
		return nil, err // *plan.Error names the component already
	}
	notes, gen, err := c.checkPlan(ctx, p, prev, readings, creds, args.Image, bundleForChecks(ctx.Context(), creds, secrets, tokenSecret))
	if err != nil {
		return fail(err)
	}
	warnings = append(warnings, notes...)
	warnings = append(warnings, p.Warnings...)
	if offline != nil {
		warnings = offlineWarnings(warnings)
	}

	// For a new cluster, registered only now: bad input fails before
	// anything, the component included, is registered.
	if comp == nil {
		comp = &TalosCluster{}
		if err := ctx.RegisterComponentResource(typ, name, comp, opts); err != nil {
			return nil, err
		}
	}
	warnings = append(warnings, p.PowerNotes()...)
	if q := p.Quorum(); q != "" {
		warnings = append(warnings, q)
	}
	sensitive := secretValues(ctx.Context())
	unknown := unknownConfigInputs(ctx.Context())
	if len(unknown) > 0 {
		if !ctx.DryRun() {
			return fail(fmt.Errorf("%s %s not known in an update: the engine resolves a component's inputs before "+
				"constructing it, so this should not happen; run pulumi up again", strings.Join(unknown, ", "), isAre(len(unknown))))
		}
		warnings = append(warnings, fmt.Sprintf("%s %s not known until the resources %s from are created: every "+
			"node's machine configuration is shown as changing once known", strings.Join(unknown, ", "), isAre(len(unknown)),
			map[bool]string{true: "it comes", false: "they come"}[len(unknown) == 1]))
	}
	if vmUnknown.any() {
		warnings = append(warnings, unknownVMWarning(unknownVM))
	}
	for i, w := range warnings {
		warnings[i] = scrubText(w, sensitive)
		_ = ctx.Log.Warn(warnings[i], &pulumi.LogArgs{Resource: comp})
	}
	next := p.State()
	base := plan.Compare(prev, next)
	warnings = append(warnings, c.warnUngatedDisks(ctx, comp, args.ClusterName, creds, offline, &base)...)
	p.MarkPower(&base)
	p.MarkBringup(&base)
	if vmUnknown.any() {
		markUnknownVMSettings(&base, p, unknownVM, vmUnknown)
	}

	f := &fanout{ctx: ctx, comp: comp, name: name, plan: p, state: next, planner: pl, tokenSecret: tokenSecret, sensitive: sensitive, unknownInputs: unknown, vmUnknown: vmUnknown, secrets: secrets, readings: readings,
		base: base, generated: gen, observed: vms, stack: c.readState, onlyLayer: c.onlyLayer}
	if im := args.Image; im != nil {
		f.factoryURL, f.installerRegistry = im.FactoryUrl, im.InstallerRegistry
		f.skipRegistration = im.SkipSchematicRegistration
	}
	if err := f.register(); err != nil {
		return fail(err)
	}

	setOutputs(ctx, comp, p, f, warnings)
	return comp, nil
}

// setOutputs sets the component's outputs from the plan and the fan-out.
func setOutputs(ctx *pulumi.Context, comp *TalosCluster, p *plan.Plan, f *fanout, warnings []string) {
	comp.Endpoint = pulumi.String(p.Endpoints.Kubernetes).ToStringOutput()
	comp.TalosVersion = pulumi.String(p.Cluster.TalosVersion).ToStringOutput()
	comp.KubernetesVersion = pulumi.String(p.Cluster.KubernetesVersion).ToStringOutput()
	// A preview with changes says what the update will do. An update
	// stores what the cluster is then, which a preview without changes
	// computes identically: a no-op preview shows no output change. The
	// pending change is logged either way (summary).
	description := p.Description()
	dryRun := ctx.DryRun()
	comp.Summary = f.summaryOut.ApplyT(func(s string) string {
		if !dryRun || s == plan.NoNodeChanges {
			return description
		}
		return s
	}).(pulumi.StringOutput)
	comp.Warnings = pulumi.ToStringArray(warnings).ToStringArrayOutput()
}

// New is the component for the provider's registration.
func New() infer.InferredComponent {
	return infer.Component[*Component, TalosClusterArgs, *TalosCluster](&Component{})
}

// readContext is the context of the component's reads of Proxmox: a
// preview goes on without a node that does not answer (its VMs are
// unknown, pve.NodeWait); an update waits for it as before.
func readContext(ctx *pulumi.Context) context.Context {
	if ctx.DryRun() {
		return pve.Planning(ctx.Context())
	}
	return ctx.Context()
}
