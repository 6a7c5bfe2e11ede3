package enginelog_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

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

// silentEngine never answers a line that has a deadline: an engine that
// hung, or one shutting down after a Cancel. It refuses at once a line sent
// without a deadline (counting it), so that a logger that would wait
// forever fails the test instead of hanging it.
type silentEngine struct {
	pulumirpc.UnimplementedEngineServer

	undated atomic.Int32
}

func (e *silentEngine) Log(ctx context.Context, _ *pulumirpc.LogRequest) (*emptypb.Empty, error) {
	if _, ok := ctx.Deadline(); !ok {
		e.undated.Add(1)

		return nil, status.Error(codes.FailedPrecondition, "a line without a deadline would wait forever")
	}

	<-ctx.Done() // the line's deadline: the engine never answers

	return nil, ctx.Err()
}

// Review s10, item 6: a line logged after the handler's own deadline has a
// deadline of its own. The engine's Log is a synchronous call: an engine
// that stops answering would otherwise hold the handler forever. The test
// ends when the line's bound passes (the call returns).
func TestALineToAnEngineThatNeverAnswersReturns(t *testing.T) {
	t.Parallel()

	engine := &silentEngine{}

	enginetest.RunAgainst(t, engine, func(ctx context.Context) {
		done, cancel := context.WithCancel(ctx)
		cancel()

		enginelog.LoggerWithin(done, 100*time.Millisecond).Warning("to an engine that never answers")
	})

	if n := engine.undated.Load(); n != 0 {
		t.Fatalf("%d line(s) went to the engine without a deadline: an engine that never answers would hold the handler forever", n)
	}
}
