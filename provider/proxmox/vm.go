package proxmox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/backoff"
	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/killpoint"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// Default bounds of each operation when Pulumi's customTimeouts give none.
const (
	defaultCreateTimeout = 30 * time.Minute
	defaultUpdateTimeout = 30 * time.Minute
	defaultDeleteTimeout = 15 * time.Minute
	defaultReadTimeout   = 5 * time.Minute
)

// Check validates the inputs at preview: formats locally, then what only the
// cluster knows (node, bridges, storages, clone source, a taken vmId).
func (*VirtualMachine) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[VirtualMachineArgs], error) {
	a, failures, err := framework.DecodeInputs[VirtualMachineArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[VirtualMachineArgs]{Inputs: a, Failures: failures}, err
	}
	old := decodeOldInputs(req.OldInputs, req.NewInputs, a)
	u := unknownPaths(req.NewInputs)
	if failures = validateVM(a, old, u); len(failures) > 0 {
		return infer.CheckResponse[VirtualMachineArgs]{Inputs: a, Failures: failures}, nil
	}
	if u.known("disks") {
		for _, w := range removedDiskWarnings(old, a) {
			enginelog.Logger(ctx).Warning(w)
		}
	}
	if config.Offline() {
		config.Skipped(ctx, config.CheckPrivileges, config.CheckInventory)
		return infer.CheckResponse[VirtualMachineArgs]{Inputs: a}, nil
	}
	c, err := config.Client(ctx)
	if err != nil {
		return infer.CheckResponse[VirtualMachineArgs]{Inputs: a}, err
	}
	ctx = pve.Planning(ctx) // a node that does not answer is a warning, not a wait
	if unchangedInputs(old, a, u) {
		// nothing to check that the last accepted inputs did not (see
		// unchangedInputs); only the node's state, which warns. A Create
		// or Update that still writes runs the rest first (recheckSkipped).
		noteSkipped(ctx, req.Name, a, old)
		v, err := checkAgainstCluster(ctx, c, req.Name, a, old, u, true)
		if err != nil {
			return infer.CheckResponse[VirtualMachineArgs]{Inputs: a}, err
		}
		for _, w := range v.warnings {
			enginelog.Logger(ctx).Warning(w)
		}
		return infer.CheckResponse[VirtualMachineArgs]{Inputs: a, Failures: v.failures}, nil
	}
	forgetSkipped(ctx)
	failures, err = checkVMFully(ctx, c, req.Name, a, old, u)
	return infer.CheckResponse[VirtualMachineArgs]{Inputs: a, Failures: failures}, err
}

// checkVMFully is every check of a VM's inputs against the cluster, its
// warnings logged: what Check runs unless the inputs are unchanged.
func checkVMFully(ctx context.Context, c *pve.Client, name string, a VirtualMachineArgs, old *VirtualMachineArgs, u unknowns) (
	[]p.CheckFailure, error) {
	// a missing privilege first: without it the reads below would say a
	// bridge or storage does not exist
	oldPool := ""
	if old != nil && old.Pool != nil {
		oldPool = *old.Pool
	}
	needs := vmNeeds(a, planKeys(a), cloneSourceConfig(ctx, c, a, u), oldPool, c.Version(), u)
	if failures := checkPrivileges(ctx, c, needs); len(failures) > 0 {
		return failures, nil
	}
	v, err := checkAgainstCluster(ctx, c, name, a, old, u, false)
	if err != nil {
		return nil, err
	}
	for _, w := range v.warnings {
		enginelog.Logger(ctx).Warning(w)
	}
	return v.failures, nil
}

// Diff classifies each change as in place or replacing (see diffVM), and
// adds what happened to the VM outside Pulumi (see withLive): a VM stopped,
// deleted or out of reach shows in the preview without a refresh.
func (*VirtualMachine) Diff(ctx context.Context, req infer.DiffRequest[VirtualMachineArgs, VirtualMachineState]) (infer.DiffResponse, error) {
	if config.Offline() {
		// a new vmId is checked with the inventory (Check said so)
		if req.State.VMID != 0 {
			config.Skipped(ctx, config.CheckDrift)
		}
		return diffVM(req.State, req.Inputs), nil
	}
	if err := checkNewVMIDFree(ctx, req.State, req.Inputs); err != nil {
		return infer.DiffResponse{}, err
	}
	d := diffVM(req.State, req.Inputs)
	if req.State.VMID == 0 || diffReplaces(d) {
		return d, nil
	}
	return withLive(ctx, d, checkLive(ctx, req.State, req.Inputs)), nil
}

// checkNewVMIDFree refuses a vmId change to an id another guest holds. Check
// lets a pinned id pass when it looks like the resource's own VM (isOwnVM);
// only the state tells for sure.
func checkNewVMIDFree(ctx context.Context, old VirtualMachineState, news VirtualMachineArgs) error {
	if news.VMID == nil || *news.VMID == old.VMID || old.VMID == 0 {
		return nil
	}
	c, err := config.Client(ctx)
	if err != nil {
		return err
	}
	vms, err := c.ClusterGuests(ctx)
	if err != nil {
		return fmt.Errorf("listing the cluster's VMs to check vmId %d: %w", *news.VMID, err)
	}
	for _, vm := range vms {
		if vm.VMID == *news.VMID {
			return fmt.Errorf("vmId %d is already used by %s %q on node %s, and this resource's VM is %d on node %s: "+
				"set vmId: %d, or choose a free vmId", vm.VMID, vm.Kind(), vm.Name, vm.Node, old.VMID, old.Node, old.VMID)
		}
	}
	return nil
}

// WireDependencies says which outputs an input change can affect, so that a
// preview marks only those as unknown.
func (*VirtualMachine) WireDependencies(f infer.FieldSelector, a *VirtualMachineArgs, s *VirtualMachineState) {
	f.OutputField(&s.VMID).DependsOn(f.InputField(&a.VMID), f.InputField(&a.Node), f.InputField(&a.Clone))
	f.OutputField(&s.SmbiosUUID).DependsOn(f.InputField(&a.SmbiosUUID), f.InputField(&a.Node), f.InputField(&a.Clone))
	f.OutputField(&s.Status).DependsOn(f.InputField(&a.Started), f.InputField(&a.Template))
	f.OutputField(&s.MACAddresses).DependsOn(f.InputField(&a.NetworkDevices), f.InputField(&a.Clone))
	for _, out := range []any{&s.IPv4Addresses, &s.IPv6Addresses} {
		f.OutputField(out).DependsOn(f.InputField(&a.NetworkDevices), f.InputField(&a.CloudInit),
			f.InputField(&a.Started), f.InputField(&a.Agent), f.InputField(&a.Clone), f.InputField(&a.ISO),
			f.InputField(&a.Template))
	}
}

// operation prepares a context for one resource operation: the provider's
// client, a deadline (Pulumi's customTimeouts, else def) and progress logs
// that go to the resource's log.
func operation(ctx context.Context, def time.Duration) (context.Context, context.CancelFunc, *pve.Client, error) {
	c, err := config.Client(ctx)
	if err != nil {
		return ctx, func() {}, nil, err
	}
	cancel := context.CancelFunc(func() {})
	if _, has := ctx.Deadline(); !has {
		ctx, cancel = context.WithTimeout(ctx, def)
	}
	log := enginelog.Logger(ctx)
	ctx = pve.WithLogger(ctx, func(msg string) { log.Info(msg) })
	ctx = pve.WithWarner(ctx, func(msg string) { log.Warning(msg) })
	return ctx, cancel, c, nil
}

// Create creates (or clones) the VM with a safely allocated VMID, then brings
// it to the inputs. Once the VM exists, any failure keeps it in the state
// (ResourceInitFailedError) so that the next `up` continues from there.
func (*VirtualMachine) Create(ctx context.Context, req infer.CreateRequest[VirtualMachineArgs]) (infer.CreateResponse[VirtualMachineState], error) {
	a := req.Inputs
	if req.DryRun {
		st := VirtualMachineState{VirtualMachineArgs: a}
		if a.VMID != nil {
			st.VMID = *a.VMID
		}
		if w := adoptionPreview(ctx, resourceIdentity(ctx)); w != "" {
			enginelog.Logger(ctx).Warning(w)
		}
		return infer.CreateResponse[VirtualMachineState]{Output: st}, nil
	}
	ctx, cancel, c, err := operation(ctx, defaultCreateTimeout)
	defer cancel()
	if err != nil {
		return infer.CreateResponse[VirtualMachineState]{}, err
	}
	if err := recheckSkipped(ctx, c, a, "created"); err != nil {
		return infer.CreateResponse[VirtualMachineState]{}, err
	}
	// once created (and started), Proxmox counts the VM's memory itself;
	// a node list read before does not, and the claim says what it takes
	// (pve.CheckNodes), so that later Checks need no read of their own
	if c.MemoryClaims().Has(req.Name) {
		ctx = pve.WithClaimedStart(ctx, req.Name)
	}
	defer c.MemoryClaims().ReleasePending(req.Name)
	id := resourceIdentity(ctx)
	ref, made, err := createVM(ctx, c, a, id)
	if ref.VMID == 0 {
		return infer.CreateResponse[VirtualMachineState]{}, err
	}
	var (
		known   pve.VMConfig
		started bool
	)
	if err == nil {
		known, started, err = converge(ctx, c, ref, nil, a, id.id, made)
	}
	// read back with a context of its own: ctx may be what ran out
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), defaultReadTimeout)
	defer rcancel()
	st, live, found, rerr := readStateAndConfig(rctx, c, ref, a, known, started)
	if id.id != "" {
		// the VM goes to the state now, with or without an error. Handed
		// over after the read, whose config shows the tags and description
		// the hand-over changes: the state shows neither (observeArgs
		// leaves the provider's own out), so it is the same either way.
		if rerr != nil || !found {
			live = nil
		}
		if herr := handOver(rctx, c, ref, id.id, false, live); herr != nil {
			err = errors.Join(err, fmt.Errorf("marking %s as created: %w", ref, herr))
		}
		killpoint.Reach("after-hand-over")
	}
	switch {
	case err == nil && rerr == nil && found:
		return infer.CreateResponse[VirtualMachineState]{ID: vmResourceID(ref), Output: st}, nil
	case rerr == nil && !found:
		return infer.CreateResponse[VirtualMachineState]{}, fmt.Errorf("%s disappeared while it was created: %w",
			ref, errors.Join(err, errors.New("it is not in the cluster any more")))
	case err == nil:
		err = fmt.Errorf("reading %s back after creating it: %w", ref, rerr)
	}
	if rerr != nil {
		// keep the inputs: the next update converges towards them
		st = VirtualMachineState{VirtualMachineArgs: a, VMID: ref.VMID,
			MACAddresses: []string{}, IPv4Addresses: []string{}, IPv6Addresses: []string{}}
	}
	st.Status = StatusUnfinished
	return infer.CreateResponse[VirtualMachineState]{ID: vmResourceID(ref), Output: st},
		infer.ResourceInitFailedError{Reasons: []string{err.Error()}}
}

// maxCreateAttempts bounds the retries of a create whose allocated VMID was
// taken by another client between allocation and create.
const maxCreateAttempts = 5

// createRetry spaces the attempts of a create call that Proxmox refused with
// a server error before making anything (jittered: parallel creates that
// failed together do not retry together).
var createRetry = backoff.Policy{Initial: 250 * time.Millisecond, Max: 2 * time.Second, Jitter: true}

// createVM creates the VM, or adopts the one an interrupted create of the
// same resource left (see adoptOwn), and returns its ref once it exists. A
// zero ref means nothing was created. made: this call's create or clone
// made the VM (it was not adopted from an interrupted run).
func createVM(ctx context.Context, c *pve.Client, a VirtualMachineArgs, id identity) (ref pve.VMRef, made bool, err error) {
	if id.id != "" {
		if ref, ok, err := adoptOwn(ctx, c, a, id, true); err != nil || ok {
			return ref, false, err
		}
	}
	ref, err = createNew(ctx, c, a, id)
	return ref, err == nil, err
}

// createNew allocates a VMID and makes the VM (see createVM).
func createNew(ctx context.Context, c *pve.Client, a VirtualMachineArgs, id identity) (pve.VMRef, error) {
	// not a backoff.Loop: a VMID taken meanwhile is retried at once, only
	// a create refused with a server error pauses (in createAttempt)
	pauses := createRetry.Start()
	for attempt := 1; ; attempt++ {
		ref, again, err := createAttempt(ctx, c, a, id, attempt, pauses)
		if !again {
			return ref, err
		}
	}
}

// createAttempt is one VMID allocation and create call; again: nothing was
// made and another attempt may succeed. It holds the VMID until it knows
// what its create did: released at once after a failed call, the id could
// go to a parallel create whose VM this attempt would then find and take
// for its own.
func createAttempt(ctx context.Context, c *pve.Client, a VirtualMachineArgs, id identity, attempt int,
	pauses *backoff.Pauses) (ref pve.VMRef, again bool, err error) {
	var (
		vmid    int
		release func()
	)
	if a.VMID != nil {
		vmid = *a.VMID
		release, err = c.IDs().Reserve(vmid)
	} else {
		vmid, release, err = c.IDs().Allocate(ctx)
	}
	if err != nil {
		return pve.VMRef{}, false, err
	}
	defer release()
	killpoint.Reach("after-vmid-allocation")
	ref = pve.VMRef{Node: a.Node, VMID: vmid}
	err = createOnce(ctx, c, ref, a, id.id)
	switch {
	case err == nil:
		return ref, false, nil
	case pve.IsAlreadyExists(err) && a.VMID == nil && attempt < maxCreateAttempts:
		pve.Logf(ctx, "VMID %d was taken by another client meanwhile (%v); allocating another", vmid, err)
		c.IDs().Taken(vmid)
		return pve.VMRef{}, true, nil
	case pve.IsAlreadyExists(err) && a.VMID != nil:
		return pve.VMRef{}, false, fmt.Errorf("vmId %d is already in use (%w): choose another vmId, or leave it "+
			"unset to allocate one", vmid, err)
	}
	// a failed create task normally removes what it made, and an
	// answer lost on the way may hide one that ran: make sure
	obs, found, ferr := observe(context.WithoutCancel(ctx), c, ref, false)
	retry := pve.IsServerError(err) && attempt < maxCreateAttempts && ctx.Err() == nil
	switch {
	case ferr == nil && !found && retry:
		// Proxmox answered the create or clone call itself with a plain
		// server error and nothing exists: the call did not happen, so
		// sending it again cannot make a second VM
		pve.Logf(ctx, "creating %s failed before anything was made (%v); trying again", ref, err)
		if backoff.Sleep(ctx, pauses.Next()) != nil {
			return pve.VMRef{}, false, err
		}
		return pve.VMRef{}, true, nil
	case ferr == nil && !found:
		return pve.VMRef{}, false, err
	case ferr != nil:
		// unknown: keep the VM in the state rather than risk one that
		// Pulumi does not know; a read drops it if it does not exist
		return ref, false, fmt.Errorf("%w (checking whether VM %d exists failed too: %v)", err, vmid, ferr)
	}
	// The VM exists. One that carries this create's identity is this
	// create's VM: the call ran and its answer was lost (a proxy failed on
	// the way back), and the create goes on with it.
	if id.id == "" || ctx.Err() != nil {
		return ref, false, err
	}
	own, ok, aerr := adoptOwn(ctx, c, a, id, false)
	switch {
	case aerr == nil && ok && own == ref:
		pve.Logf(ctx, "creating %s: the answer was lost (%v), but the VM was made; going on with it", ref, err)
		return ref, false, nil
	case aerr != nil || !foreign(err, obs):
	case a.VMID != nil:
		return pve.VMRef{}, false, fmt.Errorf("vmId %d is already in use by a VM this create did not make (the create "+
			"call failed: %w): choose another vmId, or leave it unset to allocate one", vmid, err)
	case attempt < maxCreateAttempts:
		// not this create's: another client took the VMID, as with
		// "already exists"; that VM is never claimed
		pve.Logf(ctx, "VMID %d was taken by another client meanwhile (%v); allocating another", vmid, err)
		c.IDs().Taken(vmid)
		return pve.VMRef{}, true, nil
	default:
		return pve.VMRef{}, false, err
	}
	// still locked for a create or clone that may be this one's, whose
	// answer was lost: its worker writes the identity only at its end
	if aerr == nil && lockedForCreate(obs) && awaitLostCreate(ctx, c, a, id, ref) {
		pve.Logf(ctx, "creating %s: the answer was lost (%v), but the VM was made; going on with it", ref, err)
		return ref, false, nil
	}
	// unknown whose it is, or this create's half-made VM (its task died
	// with its node): keep it in the state rather than leave it behind;
	// the next update completes it, a read drops it if it goes
	return ref, false, err
}

// foreign reports a VM found at a create's VMID that another client made:
// the create call itself was refused (no task ran for it), and the VM is
// finished. A VM still locked for its create or clone may be this
// create's own, from a call whose answer was lost: its worker writes the
// identity tags only with the rest of the configuration (qemu-server
// create_vm: create_and_lock_config, then the config at the end).
func foreign(err error, obs observation) bool {
	var te *pve.TaskError
	return !errors.As(err, &te) && !lockedForCreate(obs)
}

// lockedForCreate: the VM is locked for its create or clone, whose task
// still runs (or died with its node).
func lockedForCreate(obs observation) bool {
	for _, lock := range []string{obs.Config["lock"], obs.Status.Lock} {
		if lock == "create" || lock == "clone" {
			return true
		}
	}
	return false
}

// awaitLostCreate waits for the create or clone task that is making ref
// (this process does not know its UPID when the call's answer was lost,
// so it counts as another's) and reports whether ref then carries this
// create's identity. Under a slow Proxmox the task is still running when
// the answer's loss is noticed; without the wait the create failed and
// only the next update went on with the VM.
func awaitLostCreate(ctx context.Context, c *pve.Client, a VirtualMachineArgs, id identity, ref pve.VMRef) bool {
	node, typ, tid := ref.Node, "qmcreate", ref.VMID
	if a.Clone != nil {
		src := cloneSource(a)
		node, typ, tid = src.Node, "qmclone", src.VMID
	}
	waited, err := awaitForeignTasks(ctx, c, node, typ, tid, fmt.Sprintf("the %s making VM %d", typ, ref.VMID))
	if err != nil || !waited {
		return false
	}
	own, ok, err := adoptOwn(ctx, c, a, id, false)
	return err == nil && ok && own == ref
}

// cloneSource is the VM a.Clone names: clone.vmId on clone.node, which
// defaults to the VM's node. a.Clone must be set.
func cloneSource(a VirtualMachineArgs) pve.VMRef {
	src := pve.VMRef{Node: a.Node, VMID: a.Clone.VMID}
	if a.Clone.Node != nil {
		src.Node = *a.Clone.Node
	}
	return src
}

// createOnce sends the one call that makes the VM, carrying the create's
// identity id (when known) from that call on: a creating tag on a create,
// a creating line in the description of a clone (a clone cannot be given
// tags), which keeps the source's description, or the one the inputs give.
func createOnce(ctx context.Context, c *pve.Client, ref pve.VMRef, a VirtualMachineArgs, id string) error {
	if cl := a.Clone; cl != nil {
		src := cloneSource(a)
		o := pve.CloneOptions{Full: cl.Full == nil || *cl.Full}
		if cl.Storage != nil {
			o.Storage = *cl.Storage
		}
		if a.Name != nil {
			o.Name = *a.Name
		}
		if a.Pool != nil {
			o.Pool = *a.Pool
		}
		if id != "" {
			desc := a.Description
			if desc == nil {
				srcConf, err := c.VMConfig(ctx, src)
				if err != nil {
					return fmt.Errorf("reading the clone source %s: %w", src, err)
				}
				desc = ptr(srcConf["description"])
			}
			o.Description = pve.WithCreatingLine(*desc, id)
		}
		pve.Logf(ctx, "cloning VM %d on node %s into VM %d on node %s", cl.VMID, src.Node, ref.VMID, ref.Node)
		return c.CloneVM(ctx, src, ref, o)
	}
	params, err := createParams(creatingArgs(a, pve.VMConfig{}, id))
	if err != nil {
		return err
	}
	if a.Pool != nil {
		params["pool"] = *a.Pool
	}
	pve.Logf(ctx, "creating %s", ref)
	return c.CreateVM(ctx, ref, params)
}

// Read refreshes the state from Proxmox: drift in the inputs the user gave,
// the outputs, and a VM deleted outside Pulumi (removed from the state). An
// ID without state is an import: every setting the VM has becomes an input.
func (*VirtualMachine) Read(ctx context.Context, req infer.ReadRequest[VirtualMachineArgs, VirtualMachineState]) (
	infer.ReadResponse[VirtualMachineArgs, VirtualMachineState], error) {
	ctx, cancel, c, err := operation(ctx, defaultReadTimeout)
	defer cancel()
	if err != nil {
		return infer.ReadResponse[VirtualMachineArgs, VirtualMachineState]{}, err
	}
	ref, err := parseVMResourceID(req.ID)
	if err != nil {
		return infer.ReadResponse[VirtualMachineArgs, VirtualMachineState]{}, err
	}
	in := req.Inputs
	importing := req.State.VMID == 0 && in.Node == ""
	if !importing && ref.Node != "" && nodeOffline(ctx, c, ref.Node) {
		// nothing can be read from a node that is down: keep what the
		// state says rather than wait for it
		enginelog.Logger(ctx).Warning(fmt.Sprintf("node %s is offline: %s was not refreshed", ref.Node,
			vmLabel(req.State, in)))
		return infer.ReadResponse[VirtualMachineArgs, VirtualMachineState]{ID: req.ID, Inputs: in, State: req.State}, nil
	}
	if importing {
		o, found, err := observe(ctx, c, ref, true)
		if err != nil || !found {
			if err == nil {
				err = fmt.Errorf("cannot import %s: no VM %d in the cluster", req.ID, ref.VMID)
			}
			return infer.ReadResponse[VirtualMachineArgs, VirtualMachineState]{}, err
		}
		in = observeArgs(o)
		in.Started = nil
		if !o.Status.Running() {
			in.Started = ptr(false)
		}
		ref = o.Ref
	}
	st, found, err := readState(ctx, c, ref, in)
	if err != nil {
		return infer.ReadResponse[VirtualMachineArgs, VirtualMachineState]{}, err
	}
	if !found {
		return infer.ReadResponse[VirtualMachineArgs, VirtualMachineState]{}, nil
	}
	liveName := ""
	if st.Name != nil {
		liveName = *st.Name
	}
	if other := otherVM(ref, req.State, liveName, st.SmbiosUUID); !importing && other != "" {
		enginelog.Logger(ctx).Warning(other + ": this resource's VM was deleted outside Pulumi; it is dropped from " +
			"the state (the next `pulumi up` creates it again) and the other VM is left alone")
		return infer.ReadResponse[VirtualMachineArgs, VirtualMachineState]{}, nil
	}
	return infer.ReadResponse[VirtualMachineArgs, VirtualMachineState]{
		ID: vmResourceID(pve.VMRef{Node: st.Node, VMID: st.VMID}), Inputs: st.VirtualMachineArgs, State: st,
	}, nil
}

// Update applies the changes in place; see converge.
func (*VirtualMachine) Update(ctx context.Context, req infer.UpdateRequest[VirtualMachineArgs, VirtualMachineState]) (
	infer.UpdateResponse[VirtualMachineState], error) {
	old := req.State
	a := req.Inputs
	if req.DryRun {
		if w := restartWarning(old, a, func() bool { return memoryHotplug(ctx, old) }); w != "" {
			enginelog.Logger(ctx).Warning(w)
		}
		st := old
		st.VirtualMachineArgs = a
		return infer.UpdateResponse[VirtualMachineState]{Output: st}, nil
	}
	ctx, cancel, c, err := operation(ctx, defaultUpdateTimeout)
	defer cancel()
	if err != nil {
		return infer.UpdateResponse[VirtualMachineState]{}, err
	}
	ref := pve.VMRef{Node: old.Node, VMID: old.VMID}
	if err := awaitNode(ctx, c, ref.Node, vmLabel(old, a), "updated"); err != nil {
		return infer.UpdateResponse[VirtualMachineState]{}, err
	}
	if err := recheckSkipped(ctx, c, a, "updated"); err != nil {
		return infer.UpdateResponse[VirtualMachineState]{}, err
	}
	oldArgs := old.VirtualMachineArgs
	known, started, err := converge(ctx, c, ref, &oldArgs, a, "", false)
	if id := resourceIdentity(ctx); err == nil && id.id != "" {
		// a hand-over changes only what the state does not show (the
		// provider's tags, the creating line): known stays good for it
		err = handOver(ctx, c, ref, id.id, true, known)
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), defaultReadTimeout)
	defer rcancel()
	st, _, found, rerr := readStateAndConfig(rctx, c, ref, a, known, started)
	switch {
	case err == nil && rerr == nil && found:
		return infer.UpdateResponse[VirtualMachineState]{Output: st}, nil
	case err == nil && rerr == nil:
		return infer.UpdateResponse[VirtualMachineState]{}, fmt.Errorf("%s no longer exists: run `pulumi refresh` "+
			"to drop it from the state, then `pulumi up` to create it again", ref)
	case err == nil:
		err = rerr
	}
	if !found || rerr != nil {
		return infer.UpdateResponse[VirtualMachineState]{}, err
	}
	// part of the update happened: record what the VM is now
	st.Status = StatusUnfinished
	return infer.UpdateResponse[VirtualMachineState]{Output: st}, infer.ResourceInitFailedError{Reasons: []string{err.Error()}}
}

// Delete stops (or shuts down) the VM and destroys it with its disks. A VM
// that is already gone is success.
func (*VirtualMachine) Delete(ctx context.Context, req infer.DeleteRequest[VirtualMachineState]) (infer.DeleteResponse, error) {
	ctx, cancel, c, err := operation(ctx, defaultDeleteTimeout)
	defer cancel()
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	ref, err := parseVMResourceID(req.ID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	if ref.Node == "" {
		ref.Node = req.State.Node
	}
	if err := awaitNode(ctx, c, ref.Node, vmLabel(req.State, req.State.VirtualMachineArgs), "destroyed"); err != nil {
		return infer.DeleteResponse{}, err
	}
	st, err := c.VMStatus(ctx, ref)
	if pve.IsConfigMissing(err) {
		moved, found, ferr := locateMovedVM(ctx, c, ref, req.State)
		if ferr != nil {
			return infer.DeleteResponse{}, ferr
		}
		if !found {
			pve.Logf(ctx, "%s is already gone", ref)
			return infer.DeleteResponse{}, nil
		}
		pve.Logf(ctx, "%s was moved to node %s outside Pulumi (migration or HA); destroying it there", ref, moved.Node)
		ref = moved
		st, err = c.VMStatus(ctx, ref)
	} else if err == nil && req.State.Name != nil && st.Name != *req.State.Name {
		// renamed, or the VMID is another VM's now: the SMBIOS uuid says
		other, rerr := reusedBy(ctx, c, ref, req.State)
		if rerr != nil {
			return infer.DeleteResponse{}, rerr
		}
		if other != "" {
			enginelog.Logger(ctx).Warningf("%s: this resource's VM was deleted outside Pulumi; the other VM is left alone", other)
			return infer.DeleteResponse{}, nil
		}
	}
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	if st.Running() {
		a := req.State.VirtualMachineArgs
		if a.StopOnDestroy != nil && *a.StopOnDestroy {
			pve.Logf(ctx, "stopping %s", ref)
			err = c.StopVM(ctx, ref)
		} else {
			pve.Logf(ctx, "shutting down %s (up to %s, then stopping it)", ref, shutdownTimeout(a))
			err = c.ShutdownVM(ctx, ref, shutdownTimeout(a))
		}
		if err != nil && !pve.IsConfigMissing(err) {
			return infer.DeleteResponse{}, err
		}
	}
	pve.Logf(ctx, "destroying %s and its disks", ref)
	err = c.DeleteVM(ctx, ref)
	// qemu-server QemuServer.pm destroy_vm: "base volume '...' is still in
	// use by linked cloned"
	if err != nil && strings.Contains(err.Error(), "still in use by linked clone") {
		return infer.DeleteResponse{}, fmt.Errorf("%s is a template and linked clones still use its disks: destroy "+
			"those VMs first (a program does so by itself when the clones take clone.vmId from this template's "+
			"vmId output), or replace them with full clones: %w", ref, err)
	}
	return infer.DeleteResponse{}, err
}
