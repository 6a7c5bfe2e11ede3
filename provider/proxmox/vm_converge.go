package proxmox

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/backoff"
	"github.com/proxmoxtalos/proxmoxtalos/provider/killpoint"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

const (
	defaultShutdownTimeout = 180 * time.Second
	defaultAgentTimeout    = 300 * time.Second
)

func shutdownTimeout(a VirtualMachineArgs) time.Duration {
	if a.ShutdownTimeout != nil {
		return time.Duration(*a.ShutdownTimeout) * time.Second
	}
	return defaultShutdownTimeout
}

// converge brings an existing VM to the inputs: configuration, disks, pool,
// pending changes, power state, and the wait for the guest agent. It serves
// Update, and Create after the VM exists, so that a create that failed
// half-way is finished by the next update.
//
// creating is the identity of a create in progress: the VM keeps its
// creating tag (see creatingArgs) until the create hands it over. made: the
// create call of this operation made the VM just now, so it is stopped (a
// create or clone never starts it) and its status need not be read.
//
// It returns the configuration it read when nothing it did changed it
// since (no config call, disk operation, pending change applied or template
// conversion; a start changes none), so that the caller need not read it
// again; nil otherwise. started: it started the VM, which then runs (see
// startsRunning), so that the caller need not read its status either.
func converge(ctx context.Context, c *pve.Client, ref pve.VMRef, old *VirtualMachineArgs, a VirtualMachineArgs, creating string, made bool) (
	known pve.VMConfig, started bool, err error) {
	live, plan, err := convergeConfig(ctx, c, ref, old, a, creating)
	if err != nil {
		return nil, false, err
	}
	known = live
	if !plan.empty() {
		known = nil
	}
	killpoint.Reach("after-config")
	logImportSourceChanges(ctx, ref, old, a, live)
	if err := convergePool(ctx, c, ref, a); err != nil {
		return nil, false, err
	}
	st := pve.VMStatus{Status: "stopped"}
	if !made {
		if st, err = c.VMStatus(ctx, ref); err != nil {
			return nil, false, err
		}
	}
	restarted, err := convergePower(ctx, c, ref, a, st, plan)
	// convergePower started it (a stopped VM that is to run), and its
	// start task ended well: see startsRunning
	started = err == nil && wantsRunning(a) && !st.Running() && startsRunning(live)
	if err != nil {
		return nil, false, err
	}
	if restarted {
		known = nil
	}
	if isTemplate(a) && !truthy(live["template"]) {
		pve.Logf(ctx, "converting %s into a template", ref)
		if err := c.ConvertToTemplate(ctx, ref); err != nil {
			return nil, false, err
		}
		known = nil
	}
	if wantsRunning(a) && waitsForAddress(a) {
		if _, err := waitForAddress(ctx, c, ref, agentTimeout(a)); err != nil {
			return nil, false, err
		}
	}
	return known, started, nil
}

// startsRunning reports a VM whose start task, once it ended well, leaves
// it running with its vCPUs going (status "running", qmpstatus "running"):
// qemu-server's vm_start_nolock (src/PVE/QemuServer.pm) ends the task once
// QEMU runs, started without -S unless the configuration has "freeze"
// (config_to_command; then it waits in "prelaunch"), the VM resumes a
// hibernation state ("vmstate": -S, then cont) or the start is paused or
// an incoming migration, which this provider never asks for. So the status
// read after such a start would only say what the task said.
func startsRunning(cfg pve.VMConfig) bool {
	return cfg != nil && !truthy(cfg["freeze"]) && cfg["vmstate"] == ""
}

// convergeConfig applies the configuration plan (settings, disks), and grows
// imported disks once they exist. It returns the configuration read before
// the plan was applied, and the plan.
func convergeConfig(ctx context.Context, c *pve.Client, ref pve.VMRef, old *VirtualMachineArgs, a VirtualMachineArgs, creating string) (pve.VMConfig, configPlan, error) {
	live, err := c.VMConfig(ctx, ref)
	if err != nil {
		return nil, configPlan{}, err
	}
	a = creatingArgs(a, live, creating)
	plan, err := planConfig(old, a, live)
	if err != nil {
		return nil, plan, fmt.Errorf("%s: %w", ref, err)
	}
	if err := applyPlan(ctx, c, ref, plan); err != nil {
		return nil, plan, err
	}
	if len(plan.Imports) == 0 {
		return live, plan, nil
	}
	// the imported disks exist now, as large as their images: grow them
	if live, err = c.VMConfig(ctx, ref); err != nil {
		return nil, plan, err
	}
	grow, err := planConfig(old, a, live)
	if err != nil {
		return nil, plan, fmt.Errorf("%s: %w", ref, err)
	}
	return live, plan, applyPlan(ctx, c, ref, grow)
}

// convergePower brings the VM to the power state the inputs want: resumed if
// paused, restarted for pending changes, started, shut down, or its cloud-init
// drive rebuilt for the next boot. pendingApplied reports whether pending
// changes were looked at (and so the configuration may have changed).
func convergePower(ctx context.Context, c *pve.Client, ref pve.VMRef, a VirtualMachineArgs, st pve.VMStatus, plan configPlan) (pendingApplied bool, err error) {
	wantRunning := wantsRunning(a)
	if wantRunning && st.Paused() {
		// paused outside Pulumi: nothing in it runs until it is resumed
		// (a shutdown would be refused, "VM is paused - cannot shutdown")
		pve.Logf(ctx, "resuming %s (paused, qmpstatus %s)", ref, st.QMPStatus)
		if err := c.ResumeVM(ctx, ref); err != nil {
			return false, err
		}
	}
	rebooted := false
	if st.Running() && wantRunning {
		if rebooted, err = applyPending(ctx, c, ref, a); err != nil {
			return true, err
		}
		pendingApplied = true
	}
	switch {
	case wantRunning && !st.Running():
		pve.Logf(ctx, "starting %s", ref)
		if err := c.StartVM(ctx, ref); err != nil {
			return pendingApplied, err
		}
		killpoint.Reach("after-start")
	case !wantRunning && st.Running():
		why := "started: false"
		if isTemplate(a) {
			why = "a template does not run"
		}
		pve.Logf(ctx, "shutting down %s (%s)", ref, why)
		return pendingApplied, c.ShutdownVM(ctx, ref, shutdownTimeout(a))
	case st.Running() && !rebooted && touchesCloudInit(plan):
		// the guest reads its cloud-init drive at boot: rebuild it now so
		// that the next boot sees the new settings
		if err := c.RegenerateCloudInit(ctx, ref); err != nil {
			return pendingApplied, err
		}
		pve.Logf(ctx, "%s: cloud-init settings changed; the guest applies them at its next boot", ref)
	}
	return pendingApplied, nil
}

func isTemplate(a VirtualMachineArgs) bool { return a.Template != nil && *a.Template }

// wantsRunning: started defaults to true, and a template never runs.
func wantsRunning(a VirtualMachineArgs) bool {
	return !isTemplate(a) && (a.Started == nil || *a.Started)
}

// logImportSourceChanges says that a new importFrom on an existing disk
// changes nothing on it: the source is used only when a disk is created.
func logImportSourceChanges(ctx context.Context, ref pve.VMRef, old *VirtualMachineArgs, a VirtualMachineArgs, live pve.VMConfig) {
	if old == nil {
		return
	}
	was := map[string]string{}
	for _, d := range old.Disks {
		if d.ImportFrom != nil {
			was[d.Interface] = *d.ImportFrom
		}
	}
	for _, d := range a.Disks {
		prev, had := was[d.Interface]
		if d.ImportFrom == nil || !had || prev == *d.ImportFrom {
			continue
		}
		if _, exists := live[d.Interface]; exists {
			pve.Logf(ctx, "%s: disk %s keeps its content: importFrom (now %s) is used only when a disk is created; "+
				"replace the VM to start again from the new image", ref, d.Interface, *d.ImportFrom)
		}
	}
}

func applyPlan(ctx context.Context, c *pve.Client, ref pve.VMRef, plan configPlan) error {
	if len(plan.Set) > 0 || len(plan.Delete) > 0 {
		pve.Logf(ctx, "%s: setting %s", ref, describeChange(plan))
		if err := c.UpdateVMConfig(ctx, ref, plan.Set, plan.Delete); err != nil {
			return err
		}
	}
	if len(plan.Then) > 0 {
		if err := c.UpdateVMConfig(ctx, ref, plan.Then, nil); err != nil {
			return err
		}
	}
	for _, r := range plan.Resize {
		pve.Logf(ctx, "%s: growing disk %s to %d GiB", ref, r.Interface, r.SizeGiB)
		if err := c.ResizeDisk(ctx, ref, r.Interface, r.SizeGiB); err != nil {
			return err
		}
	}
	for _, m := range plan.Move {
		pve.Logf(ctx, "%s: moving disk %s to storage %s", ref, m.Interface, m.Storage)
		if err := c.MoveDisk(ctx, ref, m.Interface, m.Storage); err != nil {
			return err
		}
	}
	return removeUnusedVolumes(ctx, c, ref, plan.RemovedVolumes)
}

// removeUnusedVolumes deletes the volumes of removed disks, which Proxmox
// keeps as unusedN entries: deleting such an entry frees the volume.
func removeUnusedVolumes(ctx context.Context, c *pve.Client, ref pve.VMRef, volumes []string) error {
	if len(volumes) == 0 {
		return nil
	}
	live, err := c.VMConfig(ctx, ref)
	if err != nil {
		return err
	}
	var unused []string
	for k, v := range live {
		if strings.HasPrefix(k, "unused") && slices.Contains(volumes, parseDisk(v).Volume) {
			unused = append(unused, k)
		}
	}
	if len(unused) == 0 {
		return nil
	}
	slices.Sort(unused)
	return c.UpdateVMConfig(ctx, ref, nil, unused)
}

func describeChange(plan configPlan) string {
	keys := slices.Sorted(maps.Keys(plan.Set))
	for _, d := range plan.Delete {
		keys = append(keys, "-"+d)
	}
	return strings.Join(keys, ", ")
}

func touchesCloudInit(plan configPlan) bool {
	for k := range plan.Set {
		if strings.HasPrefix(k, "ipconfig") || k == "nameserver" || k == "searchdomain" || k == "name" {
			return true
		}
	}
	for _, k := range plan.Delete {
		if strings.HasPrefix(k, "ipconfig") || k == "nameserver" || k == "searchdomain" {
			return true
		}
	}
	return false
}

// applyPending restarts a running VM whose update left changes that Proxmox
// applies only at the next start, when the inputs allow it.
func applyPending(ctx context.Context, c *pve.Client, ref pve.VMRef, a VirtualMachineArgs) (bool, error) {
	pending, err := c.PendingChanges(ctx, ref)
	if err != nil || len(pending) == 0 {
		return false, err
	}
	var keys []string
	for _, p := range pending {
		keys = append(keys, p.Key)
	}
	if a.RebootAfterUpdate != nil && !*a.RebootAfterUpdate {
		pve.Warnf(ctx, "%s has changes that take effect only after a restart (%s); it was not restarted "+
			"because rebootAfterUpdate is false: restart it yourself when it suits you", ref, strings.Join(keys, ", "))
		return false, nil
	}
	pve.Logf(ctx, "restarting %s to apply changes Proxmox applies only at the next start: %s", ref, strings.Join(keys, ", "))
	if err := c.RestartVM(ctx, ref, shutdownTimeout(a)); err != nil {
		return false, fmt.Errorf("restarting %s to apply %s: %w", ref, strings.Join(keys, ", "), err)
	}
	return true, nil
}

// convergePool moves the VM into the pool the inputs name; pool: "" takes it
// out of its pool, an unset pool is not managed.
func convergePool(ctx context.Context, c *pve.Client, ref pve.VMRef, a VirtualMachineArgs) error {
	if a.Pool == nil {
		return nil
	}
	o, found, err := observe(ctx, c, ref, true)
	if err != nil || !found {
		return err
	}
	want := *a.Pool
	if o.Pool == want {
		return nil
	}
	pve.Logf(ctx, "%s: moving from pool %q to pool %q", ref, o.Pool, want)
	return c.SetPool(ctx, ref.VMID, o.Pool, want)
}

func agentEnabledIn(a VirtualMachineArgs) bool {
	return a.Agent != nil && (a.Agent.Enabled == nil || *a.Agent.Enabled)
}

func waitsForAddress(a VirtualMachineArgs) bool {
	return agentEnabledIn(a) && (a.Agent.WaitForAddress == nil || *a.Agent.WaitForAddress)
}

func agentTimeout(a VirtualMachineArgs) time.Duration {
	if a.Agent != nil && a.Agent.Timeout != nil {
		return time.Duration(*a.Agent.Timeout) * time.Second
	}
	return defaultAgentTimeout
}

// agentPoll is how often waitForAddress asks the guest agent: soon after a
// start (the agent comes up with the guest), then every few seconds.
var agentPoll = backoff.Policy{Initial: 200 * time.Millisecond, Max: 3 * time.Second}

// waitForAddress polls the guest agent until it reports a usable address.
func waitForAddress(ctx context.Context, c *pve.Client, ref pve.VMRef, timeout time.Duration) (addrs []netip.Addr, err error) {
	start := time.Now()
	deadline := start.Add(timeout)
	lastLog := start
	var lastErr error
	err = backoff.Loop{Policy: agentPoll}.Run(ctx, func(ctx context.Context, _ int) (bool, error) {
		ifaces, err := c.AgentInterfaces(ctx, ref)
		switch {
		case err == nil:
			if addrs = usableAddresses(ifaces); len(addrs) > 0 {
				return true, nil
			}
			lastErr = nil
		case pve.IsAgentNotRunning(err) || pve.Classify(err) == pve.KindTransient || pve.IsServerError(err):
			// keep polling until the agent timeout: a server error on this
			// read changes nothing and may pass
			lastErr = err
		default:
			return true, fmt.Errorf("asking the guest agent of %s for its addresses: %w", ref, err)
		}
		now := time.Now()
		if now.After(deadline) {
			why := "the agent answers but reports no address yet"
			if lastErr != nil {
				why = "the agent does not answer (" + lastErr.Error() + ")"
			}
			return true, fmt.Errorf("the QEMU guest agent of %s reported no IP address within %s: %s. Check that the "+
				"guest runs the agent (Talos: the siderolabs/qemu-guest-agent extension in the image) and that its "+
				"network comes up; the VM is kept and the next `pulumi up` waits again, or raise agent.timeout",
				ref, timeout, why)
		}
		if now.Sub(lastLog) >= 30*time.Second {
			lastLog = now
			pve.Logf(ctx, "waiting for the guest agent of %s to report an IP address (%s of %s)",
				ref, now.Sub(start).Round(time.Second), timeout)
		}
		return false, err
	})
	if _, ok := backoff.AsExhausted(err); ok {
		// only the context ends this loop
		return nil, fmt.Errorf("waiting for the guest agent of %s: %w", ref, ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	return addrs, nil
}

// usableAddresses are the addresses the agent reports outside the loopback
// interface that a client could reach (see usable).
func usableAddresses(ifaces []pve.AgentInterface) []netip.Addr {
	var addrs []netip.Addr
	for _, i := range ifaces {
		if i.Name == "lo" {
			continue
		}
		for _, a := range i.Addresses {
			if usable(a) {
				addrs = append(addrs, a)
			}
		}
	}
	return addrs
}
