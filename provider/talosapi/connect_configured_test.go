package talosapi

import (
	"context"
	"errors"
	"strings"
	"testing"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	storageapi "github.com/siderolabs/talos/pkg/machinery/api/storage"
	"google.golang.org/grpc"
)

// A node known to be configured is reached with one TLS connection (the mTLS
// call, no probe first); without Configured the probe comes first (two).
func TestConnectConfiguredNodeSkipsTheProbe(t *testing.T) {
	t.Parallel()

	osCA := newTestCA(t, "os")
	creds := clientCreds(t, osCA, "os:admin")

	for _, configured := range []bool{false, true} {
		addr, accepted := serveCounted(t, serverTLS(t, osCA, osCA), func(s *grpc.Server) {
			machineapi.RegisterMachineServiceServer(s, &secureMachine{})
		})

		conn, err := Connect(context.Background(), Target{Node: addr, Creds: creds, Configured: configured}, fastOptions())
		if err != nil {
			t.Fatalf("Configured %v: %v", configured, err)
		}

		if conn.Mode != ModeSecure {
			t.Errorf("Configured %v: mode = %s, want secure", configured, conn.Mode)
		}

		conn.Close() //nolint:errcheck

		want := int32(2)
		if configured {
			want = 1
		}

		if got := accepted.Load(); got != want {
			t.Errorf("Configured %v: the node accepted %d connections, want %d", configured, got, want)
		}
	}
}

// Configured is a guess: a node that was reset answers in maintenance mode
// all the same, and another cluster's node is named as such.
func TestConnectConfiguredGuessWrong(t *testing.T) {
	t.Parallel()

	osCA := newTestCA(t, "os")

	maint, accepted := serveCounted(t, serverTLS(t, newTestCA(t, "maintenance"), nil), func(s *grpc.Server) {
		storageapi.RegisterStorageServiceServer(s, maintenanceStorage{})
		machineapi.RegisterMachineServiceServer(s, &applyRecorder{})
	})

	conn, err := Connect(context.Background(), Target{Node: maint, Creds: clientCreds(t, osCA, "os:admin"), Configured: true}, fastOptions())
	if err != nil {
		t.Fatal(err)
	}

	if conn.Mode != ModeMaintenance {
		t.Errorf("mode = %s, want maintenance", conn.Mode)
	}

	conn.Close() //nolint:errcheck

	if got := accepted.Load(); got < 2 {
		t.Errorf("the maintenance node accepted %d connections; want the mTLS attempt and then the probe's", got)
	}

	foreign := serveSecure(t, newTestCA(t, "cluster-a"))

	// The wait ends after its first attempt (poll reports each failed
	// one), not at a time, which a loaded machine overruns.
	ctx, o := firstAttemptOnly(t, fastOptions())

	_, err = Connect(ctx, Target{Node: foreign, Creds: clientCreds(t, newTestCA(t, "cluster-b"), "os:admin"), Configured: true}, o)

	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err = %v, want *WaitError", err)
	}

	for _, want := range []string{foreign, "not signed by this cluster's OS CA", "another cluster"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// firstAttemptOnly makes a Connect end (a *WaitError, cancelled) once its
// first attempt failed, without a clock: poll reports every failed
// attempt, and the first report cancels the wait's context.
func firstAttemptOnly(t *testing.T, o Options) (context.Context, Options) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	o.Progress = func(string) { cancel() }

	return ctx, o
}
