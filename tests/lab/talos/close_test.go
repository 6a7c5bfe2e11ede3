package talos

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// Close is a power cut: it cuts the connections clients hold open and
// returns without waiting for them: a Watch stream through apid and a
// connection to the maintenance API that finished TLS and never sent the
// HTTP/2 preface (grpc-go waits up to two minutes for that preface before
// it lets a server stop gracefully).
func TestCloseIsPromptWithOpenConnections(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})

	fresh := newVM("fresh", addressBlock()(30), "scsi0")
	waitPhase(t, fresh.start(tc.sim), PhaseMaintenance)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	cp := tc.client(t, tc.cps[0])
	waitFor(t, "apid on cp1", func() bool { _, err := cp.Version(ctx); return err == nil })

	events := make(chan state.Event)
	if err := cp.COSI.Watch(ctx, resource.NewMetadata(runtime.NamespaceName, runtime.MachineStatusType, runtime.MachineStatusID, resource.VersionUndefined), events); err != nil {
		t.Fatal(err)
	}

	// The TLS handshake completes only once the server accepted the
	// connection: from then on it waits for the preface.
	silent, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fresh.addr().String()+":50000",
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // a maintenance server's self-signed certificate
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	// Close and the read below end by themselves when Close cuts the
	// connections; the bound is only a guard against hanging, well short of
	// grpc-go's two minutes, not a speed check.
	const hangGuard = time.Minute

	closed := make(chan struct{})

	go func() {
		tc.sim.Close()
		close(closed)
	}()

	select {
	case <-closed:
	case <-time.After(hangGuard):
		t.Fatalf("Close still had not returned after %s (a hang guard) while clients held connections open", hangGuard)
	}

	// Close itself dropped the silent client's connection: reading it
	// (past what the server sent before, its HTTP/2 settings) ends.
	cut := make(chan struct{})

	go func() {
		buf := make([]byte, 512)
		for {
			if _, err := silent.Read(buf); err != nil {
				close(cut)

				return
			}
		}
	}()

	select {
	case <-cut:
	case <-time.After(hangGuard):
		t.Fatalf("the silent connection was still open %s after Close returned (a hang guard)", hangGuard)
	}

	if fresh.node.Status().Phase != PhaseOff || tc.cps[0].node.Status().Phase != PhaseOff {
		t.Errorf("nodes not off after Close: %s, %s", fresh.node.Status().Phase, tc.cps[0].node.Status().Phase)
	}
}
