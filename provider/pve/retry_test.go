package pve

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestRetryRetriesLocksUntilSuccess(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxElapsed: time.Second}
	var logged []string
	ctx := WithLogger(context.Background(), func(m string) { logged = append(logged, m) })
	calls := 0
	err := p.Retry(ctx, "starting VM 104", false, func(context.Context) error {
		calls++
		if calls < 3 {
			return &APIError{Status: 500, Message: "VM is locked (clone)"}
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want success after 3", err, calls)
	}
	if len(logged) != 2 || !strings.Contains(logged[0], "starting VM 104") || !strings.Contains(logged[0], "locked") {
		t.Errorf("retries not logged with what and why: %q", logged)
	}
}

func TestRetryStopsOnPermanentErrors(t *testing.T) {
	t.Parallel()
	calls := 0
	err := DefaultRetry.Retry(context.Background(), "x", true, func(context.Context) error {
		calls++
		return &APIError{Status: 500, Message: "VM 104 already exists on node 'pve1'"}
	})
	if calls != 1 || !IsAlreadyExists(err) {
		t.Fatalf("calls %d err %v", calls, err)
	}
}

func TestRetryGivesUpAtTheDeadline(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Initial: 5 * time.Millisecond, Max: 10 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Retry(ctx, "destroying VM 104", false, func(context.Context) error {
		return &APIError{Status: 500, Message: "can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout"}
	})
	if err == nil || Classify(err) != KindLocked || time.Since(start) > time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}
