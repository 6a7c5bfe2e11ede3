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

// An upgrade the node accepts but does not install (here the installer's
// pre-flight refuses a downgrade past what Talos allows, as a power loss
// during the install would also lose it) brings the node back on its old
// version, running. Upgrade sends it once more, then fails at once with
// what happened and what to do, instead of waiting for the timeout.
func TestUpgradeLostFailsPromptly(t *testing.T) {
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

	start := time.Now()
	res, err := talosapi.Upgrade(ctx, target, talosapi.UpgradeRequest{Image: simtest.Installer("v1.9.6")}, o)

	var lost *talosapi.UpgradeLostError
	if !errors.As(err, &lost) || lost.From != simtest.Version || lost.To != "v1.9.6" || res == nil || !res.Accepted {
		t.Fatalf("Upgrade = %+v, %v (after %s); want an UpgradeLostError from %s to v1.9.6", res, err, time.Since(start), simtest.Version)
	}

	for _, want := range []string{"came back on Talos " + simtest.Version, "the upgrade was lost", "`pulumi up` again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	mu.Lock()
	resent := strings.Contains(strings.Join(lines, "\n"), "sending the upgrade again")
	mu.Unlock()

	if !resent {
		t.Error("the lost upgrade was not sent a second time")
	}

	if st := node.Status(); st.Image.Version != simtest.Version || st.Phase != "running" {
		t.Fatalf("node after the lost upgrade: %+v", st)
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
