package talosapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/eventctx"
)

func fastOptions() Options {
	return Options{PollMin: 10 * time.Millisecond, PollMax: 50 * time.Millisecond, AttemptTimeout: 2 * time.Second}
}

func TestConnectPicksMaintenanceMode(t *testing.T) {
	t.Parallel()

	addr := serveMaintenance(t)
	osCA := newTestCA(t, "os")

	conn, err := Connect(context.Background(), Target{Node: addr, Creds: clientCreds(t, osCA, "os:admin")}, fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() //nolint:errcheck

	if conn.Mode != ModeMaintenance {
		t.Fatalf("mode = %s, want maintenance", conn.Mode)
	}
}

func TestConnectPicksSecureMode(t *testing.T) {
	t.Parallel()

	osCA := newTestCA(t, "os")
	addr := serveSecure(t, osCA)

	conn, err := Connect(context.Background(), Target{Node: addr, Creds: clientCreds(t, osCA, "os:admin")}, fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() //nolint:errcheck

	if conn.Mode != ModeSecure {
		t.Fatalf("mode = %s, want secure", conn.Mode)
	}
}

func TestConnectConfiguredNodeWithoutCredentials(t *testing.T) {
	t.Parallel()

	osCA := newTestCA(t, "os")
	addr := serveSecure(t, osCA)

	_, err := Connect(context.Background(), Target{Node: addr}, fastOptions())
	if err == nil || !strings.Contains(err.Error(), "requires mTLS, but no client configuration") {
		t.Fatalf("err = %v, want a message that the node needs the client configuration", err)
	}
}

func TestConnectForeignClusterTimesOutNamingTheCA(t *testing.T) {
	t.Parallel()

	addr := serveSecure(t, newTestCA(t, "cluster-a"))
	other := clientCreds(t, newTestCA(t, "cluster-b"), "os:admin")

	ctx, o := firstAttemptOnly(t, fastOptions())

	_, err := Connect(ctx, Target{Node: addr, Creds: other}, o)

	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err = %v, want *WaitError", err)
	}

	for _, want := range []string{addr, "not signed by this cluster's OS CA", "another cluster"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestConnectUnreachableNodeIsATimelyWaitError(t *testing.T) {
	t.Parallel()

	addr := closedAddr(t)

	// The deadline passes after the first refused attempt (an event, not
	// a clock): Connect must then stop retrying and say why.
	ctx := eventctx.New()
	o := fastOptions()
	o.Progress = func(string) { ctx.Pass() }

	_, err := Connect(ctx, Target{Node: addr, Creds: clientCreds(t, newTestCA(t, "os"), "os:admin")}, o)

	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err = %v, want *WaitError", err)
	}

	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitError does not unwrap to DeadlineExceeded: %v", err)
	}

	for _, want := range []string{"timed out", addr, "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestConnectSecureRefusesMaintenanceNode(t *testing.T) {
	t.Parallel()

	addr := serveMaintenance(t)

	_, err := ConnectSecure(context.Background(), Target{Node: addr, Creds: clientCreds(t, newTestCA(t, "os"), "os:admin")}, fastOptions())
	if err == nil || !strings.Contains(err.Error(), "maintenance mode") {
		t.Fatalf("err = %v, want maintenance-mode error", err)
	}
}

// The zero Options are what the provider passes: every default must apply
// (a zero attempt timeout once made every call fail at once).
func TestConnectWithZeroOptions(t *testing.T) {
	t.Parallel()

	addr := serveMaintenance(t)

	conn, err := Connect(context.Background(), Target{Node: addr}, Options{})
	if err != nil {
		t.Fatal(err)
	}

	conn.Close() //nolint:errcheck

	if conn.Mode != ModeMaintenance {
		t.Fatalf("mode = %s", conn.Mode)
	}
}
