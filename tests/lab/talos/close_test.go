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

// Close is a power cut: it returns at once even while clients hold
// connections open, a Watch stream through apid and a connection to the
// maintenance API that finished TLS and never sent the HTTP/2 preface (grpc-go
// waits up to two minutes for that preface before it lets a server stop).
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

	closed := make(chan time.Duration, 1)

	go func() {
		start := time.Now()
		tc.sim.Close()
		closed <- time.Since(start)
	}()

	select {
	case d := <-closed:
		t.Logf("Close took %s", d)
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return within 2 s while clients held connections open")
	}

	if fresh.node.Status().Phase != PhaseOff || tc.cps[0].node.Status().Phase != PhaseOff {
		t.Errorf("nodes not off after Close: %s, %s", fresh.node.Status().Phase, tc.cps[0].node.Status().Phase)
	}
}
