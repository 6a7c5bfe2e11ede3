package vmwatch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// fakeSource answers from a state the test sets, counts looks and keeps
// the last maxAge it was given. age, when set, dates its answers that
// much before now (a shared read).
type fakeSource struct {
	state   string
	looks   int
	maxAge  time.Duration
	now     *time.Time
	age     time.Duration
	started map[int]time.Time
}

func (f *fakeSource) Look(_ context.Context, _ VM, maxAge time.Duration) Look {
	f.looks++
	f.maxAge = maxAge
	l := Look{State: f.state, Host: "pve2", HostUptime: time.Hour}
	if f.now != nil {
		l.At = f.now.Add(-f.age)
	}
	return l
}

// withStarts makes a Source that knows when its process started VMs.
type withStarts struct{ *fakeSource }

func (f withStarts) StartedAt(vmid int) (time.Time, bool) {
	at, ok := f.started[vmid]
	return at, ok
}

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// failFor makes a failed attempt on node every step for d (the first at
// *now), moving *now, and stops at a verdict.
func failFor(t *testing.T, w *Watcher, now *time.Time, node string, d, step time.Duration) error {
	t.Helper()
	for end := now.Add(d); ; {
		if err := w.Down(context.Background(), node); err != nil {
			return err
		}
		if !now.Before(end) {
			return nil
		}
		*now = now.Add(step)
	}
}

func TestWatcherPacesLooksAndNamesTheVM(t *testing.T) {
	now := t0
	src := &fakeSource{state: "stopped", now: &now}
	w := New(src, nil, []VM{{Address: "10.5.0.3", VMID: 104}}, Policy{Grace: 8 * time.Second, First: 2 * time.Second, Every: 4 * time.Second})
	w.now = func() time.Time { return now }
	ctx := context.Background()

	// another address: not watched, never looked at
	if err := w.Down(ctx, "10.5.0.9:50000"); err != nil || src.looks != 0 {
		t.Fatalf("unwatched address: %v, %d looks", err, src.looks)
	}

	// a failed dial every 500ms: looks at 2s (First), 6s and 10s (Every):
	// seen stopped from 2s to 10s, the grace
	err := failFor(t, w, &now, "10.5.0.3:50000", 12*time.Second, 500*time.Millisecond)
	if src.looks != 3 || now != t0.Add(10*time.Second) {
		t.Errorf("looks = %d, verdict at %s; want 3 looks (2s, 6s, 10s), the verdict at 10s", src.looks, now.Sub(t0))
	}
	var md *talosapi.MachineDownError
	if !errors.As(err, &md) {
		t.Fatalf("after 8s seen stopped: %v, want a *MachineDownError", err)
	}
	msg := err.Error()
	for _, want := range []string{"node 10.5.0.3:50000", "VM 104 on Proxmox node pve2", "is stopped", "for 8s", "next `pulumi up` starts it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	// the verdict stands without another look
	if again := w.Down(ctx, "10.5.0.3"); again == nil || src.looks != 3 {
		t.Errorf("second ask: %v after %d looks", again, src.looks)
	}
}

// A node whose first failed attempt since its last answer is less than
// First ago is never looked up (a VM booting mostly answers by then); the
// first look comes once First has passed. A node that answers starts that
// pause again at its next failure (review finding 9: before, the pause
// counted from the watcher's first failure only, so a node that had
// answered in between was looked up at its first failure).
func TestWatcherAsksProxmoxOnlyAfterFirstOfSilence(t *testing.T) {
	now := t0
	src := &fakeSource{state: "stopped", now: &now}
	w := New(src, nil, []VM{{Address: "10.5.0.3", VMID: 104}}, Policy{First: 2 * time.Second})
	w.now = func() time.Time { return now }
	if err := failFor(t, w, &now, "10.5.0.3", 1500*time.Millisecond, 500*time.Millisecond); err != nil || src.looks != 0 {
		t.Fatalf("within the first 2s of silence: %v, %d looks; want none", err, src.looks)
	}
	now = now.Add(500 * time.Millisecond)
	if err := w.Down(context.Background(), "10.5.0.3"); err != nil || src.looks != 1 {
		t.Fatalf("after 2s of silence: %v, %d looks; want one look, no verdict yet", err, src.looks)
	}
	if src.maxAge != 2*time.Second {
		t.Errorf("the look took a read up to %s old, want 2s (none from before the silence)", src.maxAge)
	}

	// the node answers, then misses attempts again a minute later
	now = now.Add(time.Minute)
	w.Answered("10.5.0.3:50000")
	if err := failFor(t, w, &now, "10.5.0.3", 1500*time.Millisecond, 500*time.Millisecond); err != nil || src.looks != 1 {
		t.Fatalf("within 2s of a new silence: %v, %d looks; want still 1", err, src.looks)
	}
	now = now.Add(500 * time.Millisecond)
	if err := w.Down(context.Background(), "10.5.0.3"); err != nil || src.looks != 2 {
		t.Fatalf("2s into the new silence: %v, %d looks; want 2", err, src.looks)
	}
}

// The pace is the process's (one Book), not the operation's: a new
// watcher of a node still silent does not ask again what the last look
// told, and the looks of one book's watchers never overlap their pause.
func TestWatchersOfOneBookKeepTheVMsPace(t *testing.T) {
	now := t0
	src := &fakeSource{state: "running", now: &now}
	book := NewBook()
	vms := []VM{{Address: "10.5.0.3", VMID: 104}}
	a := New(src, book, vms, Policy{})
	a.now = func() time.Time { return now }
	if err := failFor(t, a, &now, "10.5.0.3", 3*time.Second, time.Second); err != nil || src.looks != 1 {
		t.Fatalf("first operation, 3s of silence: %v, %d looks; want 1 (at 2s)", err, src.looks)
	}

	// the next operation waits on the same silent node
	b := New(src, book, vms, Policy{})
	b.now = func() time.Time { return now }
	if err := failFor(t, b, &now, "10.5.0.3", 13*time.Second, time.Second); err != nil || src.looks != 1 {
		t.Fatalf("second operation until 16s: %v, %d looks; want still 1 (the next at 17s)", err, src.looks)
	}
	now = now.Add(time.Second)
	if err := b.Down(context.Background(), "10.5.0.3"); err != nil || src.looks != 2 {
		t.Fatalf("at 17s: %v, %d looks; want 2", err, src.looks)
	}

	// a watcher with a book of its own starts its own pace: its first
	// failure is no look, the one 2s later is
	c := New(src, nil, vms, Policy{})
	c.now = func() time.Time { return now }
	if err := failFor(t, c, &now, "10.5.0.3", 2*time.Second, time.Second); err != nil || src.looks != 3 {
		t.Fatalf("own book: %v, %d looks; want 3", err, src.looks)
	}
}

// A look answered by an earlier read of the process (made for another
// VM's look) counts from that read: the next comes Every after it, and
// the grace is measured between the reads.
func TestWatcherPacesFromTheReadsTime(t *testing.T) {
	now := t0
	src := &fakeSource{state: "stopped", now: &now, age: 3 * time.Second}
	w := New(src, nil, []VM{{Address: "10.5.0.3", VMID: 104}}, Policy{Grace: 30 * time.Second})
	w.now = func() time.Time { return now }
	w.Down(context.Background(), "10.5.0.3") //nolint:errcheck // the silence's first failure, at 0s
	now = now.Add(10 * time.Second)
	// failures every second from 10s: looks at 10s (a read of 7s), 22s
	// (19s), 34s (31s: seen stopped 24s), 46s (43s: 36s, down)
	err := failFor(t, w, &now, "10.5.0.3", time.Minute, time.Second)
	if src.looks != 4 || now != t0.Add(46*time.Second) || err == nil || !strings.Contains(err.Error(), "for 36s") {
		t.Errorf("%d looks, verdict at %s: %v; want 4 looks, at 46s, for 36s", src.looks, now.Sub(t0), err)
	}
	if src.maxAge != 7500*time.Millisecond {
		t.Errorf("reads up to %s old were taken, want half of Every (7.5s)", src.maxAge)
	}
}

// A node the provider made silent (an install, an upgrade, a reboot:
// Silent) is not looked at before that silence is over, by any watcher of
// the process; a VM this process started is not looked at for Boot after
// its start unless its node answered since.
func TestWatcherLeavesExpectedSilencesAlone(t *testing.T) {
	now := t0
	src := &fakeSource{state: "stopped", now: &now, started: map[int]time.Time{105: t0}}
	book := NewBook()
	vms := []VM{{Address: "10.5.0.3", VMID: 104}, {Address: "10.5.0.4", VMID: 105}}
	a := New(withStarts{src}, book, vms, Policy{})
	a.now = func() time.Time { return now }
	a.Silent("10.5.0.3", 75*time.Second)

	// VM 105 boots: no look before 30s after its start
	if err := failFor(t, a, &now, "10.5.0.4", 29*time.Second, time.Second); err != nil || src.looks != 0 {
		t.Fatalf("VM 105 booting for 29s: %v, %d looks; want none", err, src.looks)
	}
	now = now.Add(time.Second)
	if err := a.Down(context.Background(), "10.5.0.4"); err != nil || src.looks != 1 {
		t.Fatalf("VM 105 at 30s: %v, %d looks; want 1", err, src.looks)
	}

	// VM 104 installs: another operation's watcher leaves it alone for
	// 75s, then looks every 15s and judges it 30s later
	b := New(withStarts{src}, book, vms, Policy{})
	b.now = func() time.Time { return now }
	if err := failFor(t, b, &now, "10.5.0.3", 44*time.Second, time.Second); err != nil || src.looks != 1 {
		t.Fatalf("VM 104 silent until 74s of its install: %v, %d looks; want still 1", err, src.looks)
	}
	err := failFor(t, b, &now, "10.5.0.3", time.Minute, time.Second)
	if src.looks != 4 || now != t0.Add(105*time.Second) || err == nil {
		t.Errorf("VM 104: %d looks, verdict at %s: %v; want looks at 75s, 90s, 105s and the verdict then", src.looks, now.Sub(t0), err)
	}

	// once VM 105's node has answered, its boot is over: a later silence
	// is looked at after First
	src.started[105] = now.Add(-10 * time.Second)
	b.Answered("10.5.0.4")
	looks := src.looks
	if err := failFor(t, b, &now, "10.5.0.4", 2*time.Second, time.Second); err != nil || src.looks != looks+1 {
		t.Errorf("VM 105 silent 2s after its node answered: %v, %d looks; want one more", err, src.looks-looks)
	}
}

// Policy.Scale shortens the expected silences and the boot window (the
// e2e lab's machines install and boot at once) and nothing else: the
// grace and the pace of the looks stay Proxmox's.
func TestWatcherScalesExpectedSilences(t *testing.T) {
	now := t0
	src := &fakeSource{state: "stopped", now: &now, started: map[int]time.Time{105: t0}}
	vms := []VM{{Address: "10.5.0.3", VMID: 104}, {Address: "10.5.0.4", VMID: 105}}
	w := New(withStarts{src}, nil, vms, Policy{Scale: 0.1})
	w.now = func() time.Time { return now }
	w.Silent("10.5.0.3", 75*time.Second)

	// VM 105 boots: no look before 3s (30s scaled) after its start
	step := 500 * time.Millisecond
	if err := failFor(t, w, &now, "10.5.0.4", 2500*time.Millisecond, step); err != nil || src.looks != 0 {
		t.Fatalf("VM 105 booting for 2.5s: %v, %d looks; want none", err, src.looks)
	}
	now = now.Add(step)
	if err := w.Down(context.Background(), "10.5.0.4"); err != nil || src.looks != 1 {
		t.Fatalf("VM 105 at 3s: %v, %d looks; want 1", err, src.looks)
	}

	// VM 104 installs: left alone for 7.5s (75s scaled), then looked at
	// every 15s and judged after the 30s grace, as unscaled
	if err := failFor(t, w, &now, "10.5.0.3", 4*time.Second, step); err != nil || src.looks != 1 {
		t.Fatalf("VM 104 silent until 7s of its install: %v, %d looks; want still 1", err, src.looks)
	}
	err := failFor(t, w, &now, "10.5.0.3", time.Minute, step)
	if src.looks != 4 || now != t0.Add(37500*time.Millisecond) || err == nil || !strings.Contains(err.Error(), "for 30s") {
		t.Errorf("VM 104: %d looks, verdict at %s: %v; want looks at 7.5s, 22.5s, 37.5s and the verdict then, for 30s", src.looks, now.Sub(t0), err)
	}
}

// A node that answers ends its VM's streak: looks that saw it stopped
// before do not count toward a verdict after it fell silent again, and a
// look from a read made before the answer counts for nothing.
func TestWatcherForgetsAStreakTheNodeAnswered(t *testing.T) {
	now := t0
	src := &fakeSource{state: "stopped", now: &now}
	w := New(src, nil, []VM{{Address: "10.5.0.3", VMID: 104}}, Policy{Grace: 30 * time.Second, Every: 10 * time.Second})
	w.now = func() time.Time { return now }
	if err := failFor(t, w, &now, "10.5.0.3", 22*time.Second, time.Second); err != nil || src.looks != 3 {
		t.Fatalf("22s silent: %v, %d looks (2s, 12s, 22s); want 3 and no verdict", err, src.looks)
	}
	w.Answered("10.5.0.3") // at 22s: it ran after all
	now = now.Add(time.Second)
	// silent again from 23s: looks at 25s, 35s, 45s, 55s; down at 55s
	err := failFor(t, w, &now, "10.5.0.3", time.Minute, time.Second)
	if now != t0.Add(55*time.Second) || err == nil || !strings.Contains(err.Error(), "for 30s") {
		t.Errorf("verdict at %s: %v; want at 55s, for 30s (the streak of before the answer forgotten)", now.Sub(t0), err)
	}

	// a read older than the node's last answer: no verdict from it
	src2 := &fakeSource{state: "stopped", now: &now, age: 20 * time.Second}
	w2 := New(src2, nil, []VM{{Address: "10.5.0.3", VMID: 104}}, Policy{Grace: time.Second})
	w2.now = func() time.Time { return now }
	w2.Answered("10.5.0.3")
	now = now.Add(5 * time.Second)
	if err := failFor(t, w2, &now, "10.5.0.3", 5*time.Second, time.Second); err != nil || src2.looks == 0 {
		t.Errorf("looks answered from before the answer: %v after %d looks; want looks and no verdict", err, src2.looks)
	}
}

func TestWatcherRunningVMIsNeverDown(t *testing.T) {
	src := &fakeSource{state: "running"}
	w := New(src, nil, []VM{{Address: "[fd00::3]:50000", VMID: 100}}, Policy{})
	now := time.Now()
	w.now = func() time.Time { return now }
	for range 100 {
		if err := w.Down(context.Background(), "fd00::3"); err != nil {
			t.Fatal(err)
		}
		now = now.Add(5 * time.Second)
	}
	if src.looks == 0 {
		t.Fatal("the IPv6 address was never looked up")
	}
}

// blockingSource holds the looks at VM 104 until release is closed, and
// answers the others at once.
type blockingSource struct {
	started chan struct{}
	release chan struct{}
}

func (b *blockingSource) Look(_ context.Context, vm VM, _ time.Duration) Look {
	if vm.VMID == 104 {
		b.started <- struct{}{}
		<-b.release
	}
	return Look{State: "running", Host: "pve1", HostUptime: time.Hour}
}

// A look that waits for Proxmox holds neither the other nodes' waits nor a
// second wait on the same node (review finding 2): before, Down held the
// watcher's mutex during the look, and these calls blocked until it ended
// (this test then hangs until go test's -timeout).
func TestWatcherLookDoesNotHoldOtherWaits(t *testing.T) {
	src := &blockingSource{started: make(chan struct{}), release: make(chan struct{})}
	w := New(src, nil, []VM{{Address: "10.5.0.3", VMID: 104}, {Address: "10.5.0.4", VMID: 105}}, Policy{})
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return now }
	// both nodes silent for longer than First: their next failures look
	for _, node := range []string{"10.5.0.3", "10.5.0.4"} {
		if err := w.Down(context.Background(), node); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Minute)
	first := make(chan error)
	go func() { first <- w.Down(context.Background(), "10.5.0.3") }()
	<-src.started

	if err := w.Down(context.Background(), "10.5.0.4"); err != nil {
		t.Errorf("another node while VM 104's look waits: %v", err)
	}
	if err := w.Down(context.Background(), "10.5.0.3"); err != nil {
		t.Errorf("the same node while its look waits: %v", err)
	}
	close(src.release)
	if err := <-first; err != nil {
		t.Errorf("the held look: %v", err)
	}
}
