package talos

import (
	"context"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/vmwatch"
)

// readWatch is how a refresh looks at the VM of a node that does not
// answer: a VM seen stopped, paused or gone in two looks a second apart
// (the first a second into the silence) ends the read at once. A wait's
// policy (30 s of looks, vmwatch.Policy defaults) guards an operation
// that fails when it ends; a read that ends keeps the state, so a node
// whose VM someone starts again is read by the next refresh. A VM that
// runs, or one Proxmox says nothing about, gets the whole readTimeout.
var readWatch = vmwatch.Policy{First: time.Second, Every: time.Second, Grace: time.Second}

// Read reports what the node runs. Drift shows as a changed configuration
// (and configView) or version in the state; a node back in maintenance mode
// drops out of the state; a node that does not answer within readTimeout,
// or whose VM (vmIds) Proxmox says is not running, keeps its state with a
// warning.
//
// `pulumi refresh` reads every resource twice, in its preview and in the
// refresh itself, each in a provider process of its own: the silence of a
// node whose VM runs costs up to twice readTimeout.
func (r *ConfigurationApply) Read(ctx context.Context, req infer.ReadRequest[ConfigurationApplyArgs, ConfigurationApplyState]) (infer.ReadResponse[ConfigurationApplyArgs, ConfigurationApplyState], error) {
	// A state of the previous shape gets the current one (gate_lists_migrate.go).
	st, inputs := req.State, req.Inputs
	st.gateInputs().shrink()
	inputs.gateInputs().shrink()

	keep := infer.ReadResponse[ConfigurationApplyArgs, ConfigurationApplyState]{ID: req.ID, Inputs: inputs, State: st}

	t, err := nodeTarget(st.Node, st.Endpoints, st.ClientConfiguration)
	if err != nil {
		return keep, err
	}

	log := enginelog.Logger(ctx)

	nc, mode, version, err := r.read(ctx, t, st)
	if err != nil {
		log.Warningf("node %s could not be read, its state is kept: %s", st.Node, err)

		return keep, nil
	}

	if mode == talosapi.ModeMaintenance {
		log.Warningf("node %s is in maintenance mode (reset outside Pulumi): the configuration will be applied again", st.Node)

		return infer.ReadResponse[ConfigurationApplyArgs, ConfigurationApplyState]{}, nil
	}

	st.RunningVersion = version

	current := nc.ActiveDigest
	if modeOf(st.ApplyMode) == talosapi.ApplyStaged && nc.PersistentDigest != "" {
		current = nc.PersistentDigest
	}

	if current != st.ConfigDigest && modeOf(st.ApplyMode) != talosapi.ApplyStaged {
		st.MachineConfiguration = string(nc.Active)
		st.ConfigDigest = nc.ActiveDigest

		st.ConfigView = configView(st.MachineConfiguration, st.SensitiveValues)
	} else if current != st.ConfigDigest {
		st.ConfigDigest = current
	}

	return infer.ReadResponse[ConfigurationApplyArgs, ConfigurationApplyState]{ID: req.ID, Inputs: inputs, State: st}, nil
}

// read reads the node's configuration within readBound; an error says why
// it could not (a *talosapi.MachineDownError when Proxmox said its VM does
// not run).
func (r *ConfigurationApply) read(ctx context.Context, t talosapi.Target, st ConfigurationApplyState) (*talosapi.NodeConfig, talosapi.Mode, string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.readBound())
	defer cancel()

	// Only a staged apply compares the configuration saved for the next
	// boot (Read below): another mode's refresh neither reads nor parses
	// it, as its apply does not, so a stray text there keeps no state.
	read := talosapi.ReadConfigFor
	if r.readConfig != nil {
		read = r.readConfig
	}

	return read(ctx, t, r.readOptions(ctx, st), modeOf(st.ApplyMode))
}

// readBound is how long a read waits for the node: readTimeout, unless a
// test set another.
func (r *ConfigurationApply) readBound() time.Duration {
	if r.readWait > 0 {
		return r.readWait
	}

	return readTimeout
}

// readOptions are the options of a read: the node's VM (vmIds) is looked
// at as readWatch says, through the provider's Proxmox client (or the
// test's vms). The watcher has a book of its own: its quicker verdict must
// not end the waits of an operation of the same process (`pulumi up
// --refresh`).
func (r *ConfigurationApply) readOptions(ctx context.Context, st ConfigurationApplyState) talosapi.Options {
	o := apiOptions(ctx, r.opts)

	vms := machineList(st.VmIds)
	if o.Machines != nil || len(vms) == 0 {
		return o
	}

	src := r.vms
	if src == nil {
		c, err := config.Client(ctx)
		if err != nil {
			return o
		}

		src = vmwatch.Proxmox(c)
	}

	o.Machines = vmwatch.New(src, nil, vms, readWatch)

	return o
}
