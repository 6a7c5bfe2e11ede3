package pve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/eventctx"
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
	// the reason once (not once per retry), then the success
	if len(logged) != 2 || !strings.Contains(logged[0], "starting VM 104") || !strings.Contains(logged[0], "locked") ||
		!strings.Contains(logged[1], "succeeded after 3 attempts") {
		t.Errorf("retries not logged once with what and why: %q", logged)
	}
}

// A task that failed for a passing cause is run again a bounded number of
// times, each new reason logged once; a failure that stays is not retried.
func TestRetryTaskFailures(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, MaxElapsed: time.Minute}
	var logged []string
	ctx := WithLogger(context.Background(), func(m string) { logged = append(logged, m) })
	systemd := &TaskError{UPID: UPID{Node: "pve1", Type: "qmstart", ID: "104"}, ExitStatus: "timeout waiting on systemd",
		LogTail: []string{"TASK ERROR: timeout waiting on systemd"}}
	lvm := &TaskError{UPID: UPID{Node: "pve1", Type: "qmcreate", ID: "104"},
		ExitStatus: "unable to create VM 104 - command '/sbin/lvcreate -aly -V 4194304k' failed: got timeout"}
	calls := 0
	err := p.Retry(ctx, "x", false, func(context.Context) error {
		calls++
		return []error{systemd, systemd, lvm, systemd, lvm}[calls-1]
	})
	if err == nil || calls != 1+maxTaskRetries {
		t.Fatalf("%d calls, err %v: want an error after %d", calls, err, 1+maxTaskRetries)
	}
	if len(logged) != 2 || !strings.Contains(logged[0], "systemd") || !strings.Contains(logged[1], "lvcreate") ||
		strings.Contains(logged[0], "task log") {
		t.Errorf("each reason not logged once: %q", logged)
	}
	for _, permanent := range []string{"start failed: QEMU exited with code 1", "VM quit/powerdown failed - got timeout",
		"unexpected status", "storage 'nosuch' does not exist"} {
		calls = 0
		_ = p.Retry(context.Background(), "x", true, func(context.Context) error {
			calls++
			return &TaskError{UPID: UPID{Node: "pve1", Type: "qmstart"}, ExitStatus: permanent}
		})
		if calls != 1 {
			t.Errorf("task failure %q was retried (%d calls)", permanent, calls)
		}
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

// A locked VM is retried until the caller's deadline and not after it: the
// deadline passes on the third refusal (an event, not a clock), so exactly
// three attempts are made and the error says it gave up on the lock.
func TestRetryGivesUpAtTheDeadline(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond}
	ctx := eventctx.New()
	calls := 0
	err := p.Retry(ctx, "destroying VM 104", false, func(context.Context) error {
		if calls++; calls == 3 {
			ctx.Pass()
		}
		if calls > 10 { // the deadline was ignored: end the loop so the test fails, not hangs
			return nil
		}
		return &APIError{Status: 500, Message: "can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout"}
	})
	if err == nil || Classify(err) != KindLocked || calls != 3 || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("err %v after %d attempts, want the lock error after 3", err, calls)
	}
}

// A plain server error is retried a few times for a call that is safe to
// repeat, and not at all for one that is not.
func TestRetryServerErrorsBounded(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, MaxElapsed: time.Minute}
	serverErr := &APIError{Status: 500, Message: "unable to open file '/etc/pve/nodes/pve1/qemu-server/104.conf.tmp.123' - Permission denied"}
	calls := 0
	err := p.Retry(context.Background(), "reading", true, func(context.Context) error { calls++; return serverErr })
	if err == nil || calls != 1+maxServerErrorRetries || !strings.Contains(err.Error(), "reading: failed 5 times in a row: ") {
		t.Fatalf("idempotent call with a server error: %d calls, err %v", calls, err)
	}
	calls = 0
	err = p.Retry(context.Background(), "reading", true, func(context.Context) error {
		if calls++; calls < 2 {
			return serverErr
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("a passing server error: %d calls, err %v", calls, err)
	}
	calls = 0
	_ = p.Retry(context.Background(), "creating", false, func(context.Context) error { calls++; return serverErr })
	if calls != 1 {
		t.Fatalf("a non-idempotent call was repeated after a server error: %d calls", calls)
	}
	notFound := &APIError{Status: 500, Message: "Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist"}
	calls = 0
	_ = p.Retry(context.Background(), "reading", true, func(context.Context) error { calls++; return notFound })
	if calls != 1 {
		t.Fatalf("a missing VM was asked %d times", calls)
	}
}
