package vmwatch

import (
	"context"
	"fmt"
	"strings"
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
	// Look says what Proxmox says about vm. A read this process made at
	// most maxAge ago may answer: Look.At is when it was made.
	Look(ctx context.Context, vm VM, maxAge time.Duration) Look
}

// startTimes is a Source that knows which VMs its process started, and
// when: such a VM's node is given Policy.Boot to answer before a look.
type startTimes interface {
	StartedAt(vmid int) (time.Time, bool)
}

// Watcher answers talosapi.MachineChecker for a set of VMs. One per
// operation (a create, an update). The pace of the looks, the streak they
// make and the verdict are the process's, in its Book: every operation
// that waits on a VM is told it is down at the same look.
type Watcher struct {
	src    Source
	book   *Book
	policy Policy
	now    func() time.Time
	// vms is fixed after New.
	vms map[string]*watched
}

type watched struct {
	vm VM
}

var _ talosapi.MachineNotes = (*Watcher)(nil)

// New watches vms through src, at the pace book keeps for the process (nil:
// a book of this watcher's own). Addresses are compared without their port.
func New(src Source, book *Book, vms []VM, p Policy) *Watcher {
	if book == nil {
		book = NewBook()
	}

	w := &Watcher{src: src, book: book, policy: p.withDefaults(), now: time.Now, vms: map[string]*watched{}}
	for _, v := range vms {
		w.vms[hostOnly(v.Address)] = &watched{vm: v}
	}

	return w
}

// lookTimeout bounds one look, so that a Proxmox that hangs cannot hold a
// Talos wait.
const lookTimeout = 20 * time.Second

// Down implements talosapi.MachineChecker. Proxmox is asked about a silent
// node's VM only once the node has been silent for Policy.First, after
// any silence the provider caused (Silent, Policy.Boot) and then every
// Policy.Every: before, a look could only say what the node's last answer
// or the provider's own action already told. The look runs outside the
// book's lock: a look that waits for Proxmox (up to lookTimeout) must not
// hold the waits of the other nodes, nor a second wait on the same node,
// which is told "not down" (as between two looks) until the look ends.
func (w *Watcher) Down(ctx context.Context, node string) error {
	e := w.vms[hostOnly(node)]
	if e == nil {
		return nil
	}

	b := w.book
	b.mu.Lock()

	now := w.now()
	p := b.entry(e.vm.VMID)

	if p.verdict != nil && w.startedSince(e.vm.VMID, p.verdictAt) {
		// this process started the VM after the look that found it down
		p.verdict, p.judge = nil, judge{}
	}

	if p.verdict != nil {
		b.mu.Unlock()
		return w.forNode(p.verdict, node)
	}

	if p.silentSince.IsZero() {
		// the node's first failed attempt since it answered (or since the
		// process began watching it): a node that misses one attempt
		// mostly answers the next
		p.silentSince, p.next = now, now.Add(w.policy.First)
		b.mu.Unlock()

		return nil
	}

	if now.Before(w.due(e.vm.VMID, p)) || p.looking {
		b.mu.Unlock()
		return nil
	}

	p.looking = true
	// a read made since the node fell silent, at most half a pause ago,
	// answers too: the silent nodes of one process share their reads
	maxAge := min(w.policy.Every/2, now.Sub(p.silentSince))
	b.mu.Unlock()

	lctx, cancel := context.WithTimeout(ctx, lookTimeout)
	l := w.src.Look(lctx, e.vm, maxAge)
	cancel()

	b.mu.Lock()
	defer b.mu.Unlock()

	p.looking = false

	if l.At.IsZero() {
		l.At = now
	}

	p.next = l.At.Add(w.policy.Every)

	if !p.judge.since.IsZero() && (p.judge.since.Before(p.answered) || w.startedSince(e.vm.VMID, p.judge.since)) {
		// the node answered, or this process started the VM, after the
		// streak began: its VM ran since
		p.judge = judge{}
	}

	if l.At.Before(p.answered) {
		// a read from before the node's last answer tells nothing new
		return nil
	}

	down, seen := p.judge.observe(l, w.policy)
	p.verdict, p.verdictAt = nil, time.Time{}

	if !down {
		return nil
	}

	machine := fmt.Sprintf("VM %d", e.vm.VMID)
	if l.Host != "" {
		machine += " on Proxmox node " + l.Host
	}

	p.verdict = &talosapi.MachineDownError{Node: node, Machine: machine, State: l.State,
		For: seen.Round(time.Second).String(), Advice: advice(l.State)}
	p.verdictAt = l.At

	return w.forNode(p.verdict, node)
}

// forNode is verdict v as told to the wait on node (the address, with its
// port, that this watcher's caller named).
func (w *Watcher) forNode(v *talosapi.MachineDownError, node string) error {
	c := *v
	c.Node = node

	return &c
}

// startedSince reports whether this process started VM vmid after t.
func (w *Watcher) startedSince(vmid int, t time.Time) bool {
	st, ok := w.src.(startTimes)
	if !ok {
		return false
	}

	at, ok := st.StartedAt(vmid)

	return ok && at.After(t)
}

// due is when VM vmid may next be looked at: not before its pace allows,
// nor while a silence the provider caused lasts. Called with book.mu held.
func (w *Watcher) due(vmid int, p *paced) time.Time {
	due := p.next
	if p.quietUntil.After(due) {
		due = p.quietUntil
	}

	if st, ok := w.src.(startTimes); ok {
		if at, ok := st.StartedAt(vmid); ok && !p.answered.After(at) {
			// started by this process and not answered since: booting
			if boot := at.Add(w.policy.scaled(w.policy.Boot)); boot.After(due) {
				due = boot
			}
		}
	}

	return due
}

// Answered implements talosapi.MachineNotes: the node answered, so its VM
// runs. Its next silence starts a new pace (the first look Policy.First
// after it), with no streak or verdict from before, for every watcher of
// the VM. A silence the provider caused (Silent) still holds: the node
// may answer before the reboot that an install or upgrade ends with.
func (w *Watcher) Answered(node string) {
	w.note(node, func(p *paced) {
		p.answered, p.silentSince, p.next = w.now(), time.Time{}, time.Time{}
		p.judge, p.verdict, p.verdictAt = judge{}, nil, time.Time{}
	})
}

// Silent implements talosapi.MachineNotes: the provider told the node to do
// what keeps it silent for up to d (an install, an upgrade, a reboot), so
// its VM is not looked at before d (times Policy.Scale) has passed, by any
// watcher of the process. A VM stopped in that time is judged that much
// later.
func (w *Watcher) Silent(node string, d time.Duration) {
	w.note(node, func(p *paced) {
		if until := w.now().Add(w.policy.scaled(d)); until.After(p.quietUntil) {
			p.quietUntil = until
		}
	})
}

// note changes the book's entry of the node's VM under the book's lock;
// a node this watcher does not know is ignored.
func (w *Watcher) note(node string, change func(p *paced)) {
	e := w.vms[hostOnly(node)]
	if e == nil {
		return
	}

	w.book.mu.Lock()
	defer w.book.mu.Unlock()

	change(w.book.entry(e.vm.VMID))
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
