package talosapi_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// An upgrade the node accepts but whose installer refuses it (here its
// pre-flight refuses a downgrade past what Talos allows) fails on the node,
// which reports "sequence failed: ..." for the upgrade's actor and boots
// its old version again. Upgrade ends at once with the node's words and
// what to do, and does not send it again (it would fail the same way).
// Before, the wait took the node's return for a lost upgrade and sent it a
// second time.
func TestUpgradeRefusedByTheInstallerSaysWhy(t *testing.T) {
	t.Parallel()

	lab := bootOneCP(t, simtest.Version, 2*time.Minute)

	var (
		mu    sync.Mutex
		lines []string
	)

	lab.o.Progress = func(msg string) {
		t.Log(msg)
		mu.Lock()
		lines = append(lines, msg)
		mu.Unlock()
	}
	node, ctx, o, target := lab.node, lab.ctx, lab.o, lab.target
	lab.applyConfig(t)

	if _, err := talosapi.Bootstrap(ctx, target, o); err != nil {
		t.Fatal(err)
	}

	res, err := talosapi.Upgrade(ctx, target, talosapi.UpgradeRequest{Image: simtest.Installer("v1.9.6")}, o)

	var lost *talosapi.UpgradeLostError
	if err == nil || errors.As(err, &lost) || ctx.Err() != nil || res == nil || !res.Accepted {
		t.Fatalf("Upgrade = %+v, %v; want the node's failure of the accepted upgrade to v1.9.6", res, err)
	}

	for _, want := range []string{"node " + target.Node + " accepted the upgrade to Talos v1.9.6", "sequence failed: pre-flight checks failed", "`pulumi up` again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	mu.Lock()
	resent := strings.Contains(strings.Join(lines, "\n"), "sending the upgrade again")
	mu.Unlock()

	if resent {
		t.Error("the refused upgrade was sent a second time")
	}

	if st := node.Status(); st.Image.Version != simtest.Version {
		t.Fatalf("node after the refused upgrade: %+v", st)
	}
}

// While a node is down, the wait's progress says so instead of repeating
// what the node last said (a VM left stopped after its host restarted
// showed "Talos v1.12.5, stage upgrading" for ten minutes).
func TestWaitVersionSaysNotAnswering(t *testing.T) {
	t.Parallel()

	lab := bootOneCP(t, simtest.Version, time.Minute)
	node, ctx, o, target := lab.node, lab.ctx, lab.o, lab.target
	lab.applyConfig(t)

	var (
		mu    sync.Mutex
		lines []string
		off   sync.Once
	)

	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()

	o.Progress = func(msg string) {
		t.Log(msg)
		mu.Lock()
		defer mu.Unlock()

		lines = append(lines, msg)

		switch {
		case strings.Contains(msg, "not answering"):
			wcancel()
		case strings.Contains(msg, "Talos "+simtest.Version+", stage running"):
			off.Do(func() { go node.PowerOff() })
		}
	}

	err := talosapi.WaitVersion(wctx, target, "v1.12.6", o)
	if err == nil {
		t.Fatal("WaitVersion succeeded on a node that runs another version and was powered off")
	}

	mu.Lock()
	defer mu.Unlock()

	last := lines[len(lines)-1]
	if !strings.Contains(last, "not answering (last answer: Talos "+simtest.Version+", stage running)") {
		t.Fatalf("last progress line after the power-off = %q, want it to say the node is not answering", last)
	}
}
