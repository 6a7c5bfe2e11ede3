package talosapi_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// fakeMachines says a node's machine is off once the test says so, and
// records which nodes it was asked about.
type fakeMachines struct {
	off   atomic.Bool
	mu    sync.Mutex
	asked []string
	// onAsk, if set, runs after each question is recorded.
	onAsk func()
}

func (f *fakeMachines) Down(_ context.Context, node string) error {
	f.mu.Lock()
	f.asked = append(f.asked, node)
	onAsk := f.onAsk
	f.mu.Unlock()

	if onAsk != nil {
		onAsk()
	}

	if !f.off.Load() {
		return nil
	}

	return &talosapi.MachineDownError{Node: node, Machine: "VM 104 on Proxmox node pve2", State: "stopped", For: "30s",
		Advice: "The next `pulumi up` starts it"}
}

func (f *fakeMachines) wasAsked(node string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()

	for _, a := range f.asked {
		if a == node {
			return true
		}
	}

	return false
}

// A wait on a node whose machine is off ends with the machine's state, not
// at its timeout: the upgrade wait (WaitVersion), the health wait through
// the Talos API and through the kubeconfig fetch.
func TestWaitsEndWhenTheMachineIsOff(t *testing.T) {
	t.Parallel()

	lab := bootOneCP(t, simtest.Version, 2*time.Minute)
	m := &fakeMachines{}
	lab.o.Machines = m
	cp, node, ctx, o, target := lab.addr, lab.node, lab.ctx, lab.o, lab.target
	lab.applyConfig(t)

	if _, err := talosapi.Bootstrap(ctx, target, o); err != nil {
		t.Fatal(err)
	}

	kc, err := talosapi.FetchKubeconfig(ctx, target, "", o)
	if err != nil {
		t.Fatal(err)
	}

	node.PowerOff()
	<-node.Done()

	// While the machine runs (as far as the checker knows), a node that
	// does not answer is waited for: it may be rebooting. The wait's
	// context ends once the checker was asked (an event, not a clock), so
	// the wait must still be running then and end as a wait.
	short, scancel := context.WithCancel(ctx)
	m.mu.Lock()
	m.onAsk = scancel
	m.mu.Unlock()

	err = talosapi.WaitVersion(short, target, "v1.12.6", o)

	scancel()
	m.mu.Lock()
	m.onAsk = nil
	m.mu.Unlock()

	var we *talosapi.WaitError
	if !errors.As(err, &we) || !m.wasAsked(cp.String()) {
		t.Fatalf("wait on a node that does not answer, machine running: %v (checker asked: %v); want a timeout after asking", err, m.asked)
	}

	m.off.Store(true)

	for name, wait := range map[string]func() error{
		"upgrade wait": func() error { return talosapi.WaitVersion(ctx, target, "v1.12.6", o) },
		"health wait": func() error {
			_, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: []string{cp.String()}, Creds: target.Creds, Kubeconfig: kc.Raw}, o)
			return err
		},
		"health wait fetching a kubeconfig": func() error {
			_, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: []string{cp.String()}, Creds: target.Creds, KubeconfigFrom: []string{cp.String()}}, o)
			return err
		},
		"connect": func() error { _, err := talosapi.Connect(ctx, target, o); return err },
	} {
		err := wait()

		var md *talosapi.MachineDownError
		if !errors.As(err, &md) {
			t.Errorf("%s with the machine off: %v, want a *MachineDownError", name, err)

			continue
		}

		for _, want := range []string{"node " + cp.String(), "VM 104 on Proxmox node pve2", "is stopped", "`pulumi up` starts it"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", name, err, want)
			}
		}
	}
}

// fakeNotes is fakeMachines that also hears of answers and of the
// silences the provider causes (MachineNotes).
type fakeNotes struct {
	fakeMachines
	answered atomic.Int32
	silent   map[string]time.Duration
}

func (f *fakeNotes) Answered(string) { f.answered.Add(1) }

func (f *fakeNotes) Silent(node string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.silent[node] = d
}

// A checker that takes notes hears of each answer of a node and, when an
// apply in maintenance mode starts the install, that the node will be
// silent for at least the install, reboot and boot (60 s at the lab's
// realistic durations): its VM need not be looked up meanwhile.
func TestMachinesHearOfAnswersAndOfTheInstall(t *testing.T) {
	t.Parallel()

	lab := bootOneCP(t, simtest.Version, 2*time.Minute)
	m := &fakeNotes{silent: map[string]time.Duration{}}
	lab.o.Machines = m
	s, block, cp, ctx, o := lab.sim, lab.ip, lab.addr, lab.ctx, lab.o
	lab.applyConfig(t)

	m.mu.Lock()
	d, ok := m.silent[cp.String()]
	m.mu.Unlock()

	if !ok || d < time.Minute {
		t.Errorf("after the install from maintenance mode the checker heard silence %s (told: %v), want at least 1m", d, ok)
	}

	// the apply in maintenance mode and the wait's last attempt answered
	if n := m.answered.Load(); n < 2 {
		t.Errorf("the checker heard of %d answers, want at least 2", n)
	}

	// a worker also waits for its certificate from the control planes
	wk := block(3)
	simtest.Boot(s, "w1", wk, "scsi0")

	if _, err := talosapi.Apply(ctx, talosapi.Target{Node: wk.String(), Creds: adminCreds(t)},
		talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleWorker, cp, "/dev/sda", simtest.Version)}, o); err != nil {
		t.Fatal(err)
	}

	m.mu.Lock()
	dw := m.silent[wk.String()]
	m.mu.Unlock()

	if dw <= d {
		t.Errorf("a worker's install: silence %s, want longer than a control plane's (%s)", dw, d)
	}
}
