package vmwatch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// fakeSource answers from a state the test sets and counts looks.
type fakeSource struct {
	state string
	looks int
}

func (f *fakeSource) Look(_ context.Context, _ VM) Look {
	f.looks++
	return Look{State: f.state, Host: "pve2", HostUptime: time.Hour}
}

func TestWatcherPacesLooksAndNamesTheVM(t *testing.T) {
	src := &fakeSource{state: "stopped"}
	w := New(src, []VM{{Address: "10.5.0.3", VMID: 104}}, Policy{Grace: 10 * time.Second, First: 2 * time.Second, Max: 4 * time.Second})
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return now }
	ctx := context.Background()

	// another address: not watched, never looked at
	if err := w.Down(ctx, "10.5.0.9:50000"); err != nil || src.looks != 0 {
		t.Fatalf("unwatched address: %v, %d looks", err, src.looks)
	}

	var err error
	// a failed dial every 500ms for 12s: looks at 2, 4, 8, 12 (the first
	// after 2s of silence, then pauses 2, 4, 4)
	for i := 0; i <= 24 && err == nil; i++ {
		err = w.Down(ctx, "10.5.0.3:50000")
		if err == nil {
			now = now.Add(500 * time.Millisecond)
		}
	}
	if src.looks != 4 {
		t.Errorf("looks = %d, want 4 (at 2s, 4s, 8s, 12s)", src.looks)
	}
	var md *talosapi.MachineDownError
	if !errors.As(err, &md) {
		t.Fatalf("after 10s stopped: %v, want a *MachineDownError", err)
	}
	msg := err.Error()
	for _, want := range []string{"node 10.5.0.3:50000", "VM 104 on Proxmox node pve2", "is stopped", "for 10s", "next `pulumi up` starts it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	// the verdict stands without another look
	if again := w.Down(ctx, "10.5.0.3"); again == nil || src.looks != 4 {
		t.Errorf("second ask: %v after %d looks", again, src.looks)
	}
}

// A node whose first failed attempt of a wait is less than First ago is
// never looked up (a VM booting mostly answers by then); the first look
// comes once First has passed. That pause counts from the wait's first
// failure only: Down is not told when the node answers, so a node that
// answered in between and fails again later is looked up at once.
func TestWatcherAsksProxmoxOnlyAfterFirstOfSilence(t *testing.T) {
	src := &fakeSource{state: "stopped"}
	w := New(src, []VM{{Address: "10.5.0.3", VMID: 104}}, Policy{First: 2 * time.Second})
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return now }
	for range 3 { // failed attempts over 1.5s
		if err := w.Down(context.Background(), "10.5.0.3"); err != nil {
			t.Fatal(err)
		}
		now = now.Add(500 * time.Millisecond)
	}
	if src.looks != 0 {
		t.Fatalf("%d looks within the first 2s of silence, want 0", src.looks)
	}
	now = now.Add(500 * time.Millisecond)
	if err := w.Down(context.Background(), "10.5.0.3"); err != nil || src.looks != 1 {
		t.Fatalf("after 2s of silence: %v, %d looks; want one look, no verdict yet", err, src.looks)
	}
}

func TestWatcherRunningVMIsNeverDown(t *testing.T) {
	src := &fakeSource{state: "running"}
	w := New(src, []VM{{Address: "[fd00::3]:50000", VMID: 100}}, Policy{})
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

func (b *blockingSource) Look(_ context.Context, vm VM) Look {
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
	w := New(src, []VM{{Address: "10.5.0.3", VMID: 104}, {Address: "10.5.0.4", VMID: 105}}, Policy{})
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
