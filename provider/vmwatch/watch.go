package vmwatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// VM is the Proxmox VM behind a Talos node address.
type VM struct {
	// Address is the node's Talos address (IP or name, port ignored).
	Address string
	// VMID is the VM's id, unique in its Proxmox cluster.
	VMID int
}

// Source looks at VMs: one Proxmox request or two, no retries (the next look
// is the retry). An error of Proxmox is a Look with State "".
type Source interface {
	Look(ctx context.Context, vm VM) Look
}

// Watcher answers talosapi.MachineChecker for a set of VMs. One per
// operation (a create, an update): its judges follow that operation's
// waits.
type Watcher struct {
	src    Source
	policy Policy
	now    func() time.Time

	mu  sync.Mutex
	vms map[string]*watched
}

type watched struct {
	vm      VM
	judge   judge
	next    time.Time
	pause   time.Duration
	verdict *talosapi.MachineDownError
	// looking: a look at this VM is under way (outside Watcher.mu); the
	// callers that ask meanwhile are answered "not down" at once.
	looking bool
}

// New watches vms through src. Addresses are compared without their port.
func New(src Source, vms []VM, p Policy) *Watcher {
	w := &Watcher{src: src, policy: p.withDefaults(), now: time.Now, vms: map[string]*watched{}}
	for _, v := range vms {
		w.vms[hostOnly(v.Address)] = &watched{vm: v}
	}

	return w
}

// lookTimeout bounds one look, so that a Proxmox that hangs cannot hold a
// Talos wait.
const lookTimeout = 20 * time.Second

// Down implements talosapi.MachineChecker. The look runs outside w.mu: a
// look that waits for Proxmox (up to lookTimeout) must not hold the waits
// of the other nodes, nor a second wait on the same node, which is told
// "not down" (as between two looks) until the look ends.
func (w *Watcher) Down(ctx context.Context, node string) error {
	w.mu.Lock()
	e := w.vms[hostOnly(node)]
	if e == nil {
		w.mu.Unlock()
		return nil
	}

	if e.verdict != nil {
		w.mu.Unlock()
		return e.verdict
	}

	now := w.now()
	if e.next.IsZero() && e.pause == 0 {
		// the first attempt of this watcher that fails: Proxmox is asked
		// only First after it (not reset when the node answers again:
		// Down hears only of failures). A node that misses one
		// attempt mostly boots or reboots (a new VM, an install), which
		// the wait's next attempts see end; a look now would be a
		// request for nothing (a verdict needs Grace of looks anyway).
		e.next = now.Add(w.policy.First)
		w.mu.Unlock()
		return nil
	}
	if now.Before(e.next) || e.looking {
		w.mu.Unlock()
		return nil
	}

	e.looking = true
	w.mu.Unlock()

	lctx, cancel := context.WithTimeout(ctx, lookTimeout)
	l := w.src.Look(lctx, e.vm)
	cancel()

	w.mu.Lock()
	defer w.mu.Unlock()

	e.looking = false

	if l.At.IsZero() {
		l.At = now
	}

	down, seen := e.judge.observe(l, w.policy)

	if e.pause == 0 {
		e.pause = w.policy.First
	} else {
		e.pause = min(e.pause*2, w.policy.Max)
	}

	e.next = now.Add(e.pause)

	if !down {
		return nil
	}

	machine := fmt.Sprintf("VM %d", e.vm.VMID)
	if l.Host != "" {
		machine += " on Proxmox node " + l.Host
	}

	e.verdict = &talosapi.MachineDownError{Node: node, Machine: machine, State: l.State,
		For: seen.Round(time.Second).String(), Advice: advice(l.State)}

	return e.verdict
}

// advice says how the VM comes back.
func advice(state string) string {
	switch state {
	case "gone":
		return "The next `pulumi up` creates it again when a VirtualMachine resource of the stack manages it (a " +
			"TalosCluster's do); otherwise restore it"
	case "paused", "suspended":
		return "The next `pulumi up` resumes it when a VirtualMachine resource of the stack manages it (a " +
			"TalosCluster's do) and then goes on with this node; otherwise resume it in Proxmox"
	default:
		return "The next `pulumi up` starts it when a VirtualMachine resource of the stack manages it (a " +
			"TalosCluster's do) and then goes on with this node; otherwise start it in Proxmox"
	}
}

// hostOnly drops a port and IPv6 brackets.
func hostOnly(addr string) string {
	if i := strings.LastIndex(addr, "]:"); strings.HasPrefix(addr, "[") && i > 0 {
		return addr[1:i]
	}

	if strings.Count(addr, ":") == 1 {
		addr, _, _ = strings.Cut(addr, ":")
	}

	return strings.Trim(addr, "[]")
}
