package harness

import (
	"context"
	"strconv"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// StartLab starts an in-process lab for one test (on loopback; TimeScale stays 0, as fast
// as possible, unless opts says otherwise), closes it when the test ends, and returns it
// with the values a stack needs to reach it.
func StartLab(t testing.TB, opts lab.Options) (*lab.Lab, Lab) {
	t.Helper()
	l, err := lab.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the lab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	return l, LabOf(l)
}

// LabOf is what a stack needs to reach the in-process lab l.
func LabOf(l *lab.Lab) Lab {
	return Lab{Endpoint: l.Endpoint(), APIToken: l.APIToken(), CACert: string(l.CACertPEM()),
		VMWatchScale: VMWatchScaleFor(l.TimeScale())}
}

// EnvVMWatchScale is the provider's config.EnvVMWatchScale (the e2e module does not import
// the provider's packages).
const EnvVMWatchScale = "PROXMOXTALOS_VM_WATCH_SCALE"

// VMWatchScaleFor is the provider's VM watch scale for a lab at timeScale: the windows in
// which the provider expects a node to be silent (75 s after an install or upgrade, 45 s
// after a reboot, 30 s after a VM start) are sized for real machines, and the lab's
// machines install, reboot and boot in timeScale of real time. At least 0.1: at time scale
// 0 the lab's real etcd and kube-apiserver still take seconds. Capped at 1, the
// provider's default.
func VMWatchScaleFor(timeScale float64) float64 {
	return min(max(timeScale, 0.1), 1)
}

// vars are the provider's environment variables for a stack on this lab.
func (l *Lab) vars() map[string]string {
	if l.VMWatchScale <= 0 {
		return nil
	}
	return map[string]string{EnvVMWatchScale: strconv.FormatFloat(l.VMWatchScale, 'g', -1, 64)}
}
