package talos

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// TestPausedNodeDoesNotAnswer: while Proxmox has the VM paused, a call to
// the node gets no answer (the caller's deadline ends it) and the agent is
// silent; a call made while paused is answered once the VM is resumed, by
// the same boot.
func TestPausedNodeDoesNotAnswer(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	ip := addressBlock()
	v := newVM("cp1", ip(21), "scsi0")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	c := maintenanceClient(t, v.addr())
	ctx := ctxT(t)

	if _, err := c.Disks(ctx); err != nil {
		t.Fatal(err)
	}

	if _, ok := n.Agent(); !ok {
		t.Fatal("the agent does not answer before the pause") // the ISO has the qemu-guest-agent extension
	}

	n.Pause()

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := c.Disks(short)
	cancel()
	wantCode(t, err, codes.DeadlineExceeded, "")

	if _, ok := n.Agent(); ok {
		t.Error("the agent of a paused node answers")
	}

	answered := make(chan error, 1)
	go func() {
		_, err := c.Disks(ctx)
		answered <- err
	}()

	n.Resume()

	if err := <-answered; err != nil {
		t.Errorf("the call made while paused: %v", err)
	}

	if st := n.Status(); st.Phase != PhaseMaintenance {
		t.Errorf("after resume the node is %s", st.Phase)
	}
}
