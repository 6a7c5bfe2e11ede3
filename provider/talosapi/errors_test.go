package talosapi

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/go-multierror"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	t.Parallel()

	nodeErr := func(err error) error {
		// machinery's FilterMessages wraps per-node errors like this.
		return multierror.Append(nil, &client.NodeError{Node: "10.5.0.2", Err: err})
	}

	cases := []struct {
		name string
		err  error
		want failure
	}{
		{"refused", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 10.5.0.2:50000: connect: connection refused"`), failTransient},
		{"deadline", context.DeadlineExceeded, failTransient},
		{"wrapped deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), failTransient},
		{"status deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), failTransient},
		{"unknown CA", status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"`), failTLS},
		{"cert required", status.Error(codes.Unavailable, "connection error: desc = \"error reading server preface: remote error: tls: certificate required\""), failTLS},
		{"invalid config", status.Error(codes.InvalidArgument, "configuration validation failed: 1 error occurred"), failPermanent},
		{"invalid config through node error", nodeErr(status.Error(codes.InvalidArgument, "bad")), failPermanent},
		{"unavailable through node error", nodeErr(status.Error(codes.Unavailable, "rebooting")), failTransient},
		{"unimplemented", status.Error(codes.Unimplemented, "API is not implemented in maintenance mode"), failPermanent},
		{"permission", status.Error(codes.PermissionDenied, "not authorized"), failPermanent},
		{"plain refused", errors.New("dial tcp: connect: connection refused"), failTransient},
		{"plain other", errors.New("failed to parse config"), failPermanent},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()

			if got := classify(c.err); got != c.want {
				t.Fatalf("classify(%v) = %s, want %s", c.err, got, c.want)
			}
		})
	}
}

func TestStatusMessageStripsPrefix(t *testing.T) {
	t.Parallel()

	err := status.Error(codes.InvalidArgument, "install disk /dev/vda not found")
	if got := statusMessage(err); got != "install disk /dev/vda not found" {
		t.Fatalf("statusMessage = %q", got)
	}

	plain := errors.New("boom")
	if got := statusMessage(plain); got != "boom" {
		t.Fatalf("statusMessage(plain) = %q", got)
	}
}
