package talosapi

import (
	"errors"
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
