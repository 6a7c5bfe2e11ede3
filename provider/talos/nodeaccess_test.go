package talos

import (
	"context"
	"testing"
	"time"
)

func TestWithTimeout(t *testing.T) {
	t.Parallel()

	remaining := func(ctx context.Context) time.Duration {
		dl, ok := ctx.Deadline()
		if !ok {
			return 0
		}

		return time.Until(dl).Round(time.Minute)
	}

	// Our default when nothing else bounds the operation.
	ctx, cancel, err := withTimeout(context.Background(), nil, "create")
	if err != nil || remaining(ctx) != 10*time.Minute {
		t.Fatalf("default: %s %v", remaining(ctx), err)
	}

	cancel()

	// Pulumi's customTimeouts (a deadline on the context) win over the default.
	outer, outerCancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer outerCancel()

	ctx, cancel, _ = withTimeout(outer, &Timeouts{}, "update")
	if remaining(ctx) != 30*time.Minute {
		t.Fatalf("customTimeouts: %s", remaining(ctx))
	}

	cancel()

	// An explicit input applies (within the outer deadline).
	five := "5m"

	ctx, cancel, _ = withTimeout(outer, &Timeouts{Delete: &five}, "delete")
	if remaining(ctx) != 5*time.Minute {
		t.Fatalf("explicit: %s", remaining(ctx))
	}

	cancel()

	bad := "soon"
	if _, _, err := withTimeout(context.Background(), &Timeouts{Create: &bad}, "create"); err == nil {
		t.Fatal("bad duration accepted")
	}
}
