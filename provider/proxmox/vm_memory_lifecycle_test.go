package proxmox_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// warnings records the warnings the provider logs. Without an engine (the
// integration server), pulumi-go-provider logs through slog's default.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}

// take returns and forgets the warnings so far.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

func bigVM(node, name string, mib int) map[string]property.Value {
	m := plainVM(node, name)
	m["memory"] = obj(map[string]property.Value{"dedicated": num(mib)})
	return m
}

// A VM whose memory does not fit its node's free memory is a warning at
// preview, with the numbers; the program's other new VMs on the node count
// until they run. Not parallel: it replaces slog's default logger.
func TestVirtualMachineMemoryWarning(t *testing.T) {
	rec := &warnings{}
	prev := slog.Default()
	slog.SetDefault(slog.New(rec))
	t.Cleanup(func() { slog.SetDefault(prev) })
	e := newEnv(t, lab.Options{}) // nodes of 65536 MiB, 2048 MiB of them for the host

	expect := func(what string, want ...string) string {
		t.Helper()
		got := rec.take()
		if len(want) == 0 {
			if len(got) != 0 {
				t.Errorf("%s: unexpected warnings %q", what, got)
			}
			return ""
		}
		if len(got) != 1 {
			t.Errorf("%s: warnings %q, want one", what, got)
			return ""
		}
		for _, w := range want {
			if !strings.Contains(got[0], w) {
				t.Errorf("%s: warning %q lacks %q", what, got[0], w)
			}
		}
		return got[0]
	}

	e.check(vmType, "huge", property.Map{}, property.NewMap(bigVM("pve2", "huge", 70000)))
	expect("70000 MiB on a node with 63488 MiB free", "needs 70000 MiB", "node pve2 has 63488 MiB free",
		"65536 MiB total, 2048 MiB in use")
	e.check(vmType, "stopped", property.Map{}, property.NewMap(func() map[string]property.Value {
		m := bigVM("pve2", "stopped", 70000)
		m["started"] = boolean(false)
		return m
	}()))
	expect("a VM that is not started")

	aIn := property.NewMap(bigVM("pve3", "a", 40000))
	e.check(vmType, "a", property.Map{}, aIn)
	expect("40000 MiB fits")
	e.check(vmType, "b", property.Map{}, property.NewMap(bigVM("pve3", "b", 40000)))
	expect("the second 40000 MiB VM of the program", "needs 40000 MiB", "node pve3 has 63488 MiB free",
		"1 other new VM(s) of this program will take 40000 MiB of it")

	// once a runs, Proxmox counts its memory and the program's claim goes
	aID, a := e.create(vmType, "a", aIn)
	rec.take()
	e.check(vmType, "b", property.Map{}, property.NewMap(bigVM("pve3", "b", 40000)))
	if w := expect("b after a runs", "node pve3 has 23488 MiB free", "42048 MiB in use"); strings.Contains(w, "other new VM") {
		t.Errorf("a is still counted as planned: %q", w)
	}

	// growing a running VM needs the difference
	e.check(vmType, "a", aIn, property.NewMap(bigVM("pve3", "a", 64000)))
	expect("growth", "growing the VM from 40000 to 64000 MiB needs 24000 MiB more", "23488 MiB free",
		"1 other new VM(s) of this program will take 40000 MiB of it")
	e.check(vmType, "a", aIn, property.NewMap(bigVM("pve3", "a", 40000)))
	expect("no growth")
	e.delete(vmType, "a", aID, a)
}

// A VM this process creates leaves the node list its Check read in use for
// the Checks after it (a new cluster's workers, checked once the control
// planes' VMs run): they count its memory with its claim and read no node
// list of their own, unless the memory might not fit, when the warning is
// made from a list read afresh.
func TestChecksAfterACreateKeepTheNodeList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{}) // nodes of 65536 MiB, 2048 MiB of them for the host
	aIn := property.NewMap(bigVM("pve3", "a", 40000))
	e.create(vmType, "a", aIn)

	const nodeList = "GET /nodes"
	before := e.lab.PVE.Calls(nodeList)
	e.check(vmType, "c", property.Map{}, property.NewMap(bigVM("pve3", "c", 8000)))
	if n := e.lab.PVE.Calls(nodeList) - before; n != 0 {
		t.Errorf("the Check of a VM that fits beside a read the node list %d times, want none", n)
	}
	// 23488 MiB are free once a runs: 30000 may not fit, and the
	// warning's numbers are Proxmox's
	e.check(vmType, "d", property.Map{}, property.NewMap(bigVM("pve3", "d", 30000)))
	if n := e.lab.PVE.Calls(nodeList) - before; n != 1 {
		t.Errorf("the Check of a VM that may not fit read the node list %d times, want once", n)
	}
}
