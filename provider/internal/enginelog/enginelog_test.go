package enginelog_test

import (
	"context"
	"slices"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginetest"
)

// A warning logged once the request's context is done (an operation that
// ran out of time says what it left undone) reaches the engine, with the
// resource's URN. The same line through pulumi-go-provider's own logger of
// that context is lost: the premise of the package, checked so that the
// harness is known to tell the two apart.
func TestWarningsReachTheEngineAfterTheDeadline(t *testing.T) {
	t.Parallel()

	logs := enginetest.Run(t, func(ctx context.Context) {
		done, cancel := context.WithCancel(ctx)
		cancel()

		p.GetLogger(done).Warning("through the done context")
		enginelog.Logger(done).Warning("through enginelog")
	})

	got := enginetest.Messages(logs, pulumirpc.LogSeverity_WARNING)
	if !slices.Equal(got, []string{"through enginelog"}) {
		t.Fatalf("the engine received %q, want only the line logged through enginelog", got)
	}

	for _, l := range logs {
		if l.GetUrn() != enginetest.URN {
			t.Errorf("%q is about %q, want the request's resource %q", l.GetMessage(), l.GetUrn(), enginetest.URN)
		}
	}
}
