package talosapi

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestBootstrapVerdict(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name    string
		err     error
		outcome BootstrapOutcome
		retry   bool
		fail    bool
	}{
		{"ok", nil, Bootstrapped, false, false},
		// machined v1alpha1_server.go Bootstrap answers, verbatim.
		{"already", status.Error(codes.AlreadyExists, "etcd data directory is not empty"), AlreadyBootstrapped, false, false},
		{"not yet", status.Error(codes.FailedPrecondition, "bootstrap is not available yet"), "", true, false},
		{"time", status.Error(codes.FailedPrecondition, "time is not in sync yet"), "", true, false},
		{"worker", status.Error(codes.FailedPrecondition, "bootstrap can only be performed on a control plane node"), "", false, true},
		{"unreachable", status.Error(codes.Unavailable, "connection refused"), "", true, false},
		{"denied", status.Error(codes.PermissionDenied, "not authorized"), "", false, true},
		{"plain refused", errors.New("dial tcp: connect: connection refused"), "", true, false},
	}

	for _, c := range cases {
		out, retry, fail := bootstrapVerdict(c.err)
		if out != c.outcome || retry != c.retry || (fail != nil) != c.fail {
			t.Errorf("%s: got (%q, retry=%v, fail=%v), want (%q, %v, %v)", c.name, out, retry, fail, c.outcome, c.retry, c.fail)
		}
	}
}

func TestBootstrapRetriesUntilReadyThenStops(t *testing.T) {
	t.Parallel()

	osCA := newTestCA(t, "os")
	addr, m := serveSecureMachine(t, osCA, &secureMachine{bootstrapAnswers: []error{
		status.Error(codes.FailedPrecondition, "bootstrap is not available yet"),
		status.Error(codes.FailedPrecondition, "time is not in sync yet"),
		nil,
	}})

	out, err := Bootstrap(context.Background(), Target{Node: addr, Creds: clientCreds(t, osCA, "os:admin")}, fastOptions())
	if err != nil || out != Bootstrapped {
		t.Fatalf("Bootstrap = %q, %v", out, err)
	}

	if m.calls() != 3 {
		t.Fatalf("bootstrap called %d times, want 3 (two not-ready answers, then success)", m.calls())
	}
}

func TestBootstrapAlreadyExistsIsDoneAtOnce(t *testing.T) {
	t.Parallel()

	osCA := newTestCA(t, "os")
	addr, m := serveSecureMachine(t, osCA, &secureMachine{bootstrapAnswers: []error{status.Error(codes.AlreadyExists, "etcd data directory is not empty")}})

	out, err := Bootstrap(context.Background(), Target{Node: addr, Creds: clientCreds(t, osCA, "os:admin")}, fastOptions())
	if err != nil || out != AlreadyBootstrapped || m.calls() != 1 {
		t.Fatalf("Bootstrap = %q, %v after %d calls; want already-bootstrapped after 1", out, err, m.calls())
	}
}

func TestBootstrapOnWorkerFails(t *testing.T) {
	t.Parallel()

	osCA := newTestCA(t, "os")
	addr, m := serveSecureMachine(t, osCA, &secureMachine{bootstrapAnswers: []error{status.Error(codes.FailedPrecondition, "bootstrap can only be performed on a control plane node")}})

	_, err := Bootstrap(context.Background(), Target{Node: addr, Creds: clientCreds(t, osCA, "os:admin")}, fastOptions())
	if err == nil || !strings.Contains(err.Error(), "control plane") || m.calls() != 1 {
		t.Fatalf("err = %v after %d calls", err, m.calls())
	}
}

func TestBootstrapThroughEndpointSetsNodeMetadata(t *testing.T) {
	t.Parallel()

	osCA := newTestCA(t, "os")
	addr, m := serveSecureMachine(t, osCA, &secureMachine{})

	// The endpoint is the test server; the node is another address that
	// does not answer: the call must go through the endpoint's proxy.
	_, err := Bootstrap(context.Background(), Target{Node: "127.0.0.1:1", Endpoints: []string{addr}, Creds: clientCreds(t, osCA, "os:admin")}, fastOptions())
	if err != nil {
		t.Fatal(err)
	}

	m.mu.Lock()
	defer m.mu.Unlock()

	if len(m.nodeSeen) != 1 || m.nodeSeen[0] != "127.0.0.1" {
		t.Fatalf("node metadata = %v, want [127.0.0.1]", m.nodeSeen)
	}
}
