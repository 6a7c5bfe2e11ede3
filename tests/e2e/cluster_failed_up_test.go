package e2e

import (
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// Issue 10 case 9: a failed up shows the root error first, with no
// follow-on error of the component ("TalosCluster ... has a problem:
// marshaling properties: awaiting input property ... context canceled", or
// "grpc: the client connection is closing"), and the stack keeps its
// outputs (the kubeconfig to look at the cluster with).
func TestClusterFailedUpShowsTheRootError(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	prog := l.program(1, 1)
	p := harness.NewYAMLProject(t, env, "cluster", prog.render(t))
	p.ConfigureLab(t, l.conn)
	tcTimed(t, "create 1+1", func() harness.Result { return p.Up(t) })

	// The new worker's VM cannot start (a failure Proxmox keeps).
	l.SetFaults(pve.Faults{Script: []pve.FaultRule{{Task: "qmstart", Message: "start failed: QEMU exited with code 1"}}})
	prog.Workers = 2
	p.WriteProgram(t, "cluster", prog.render(t))
	up := p.Up(t)
	out := up.Output()
	if up.ExitCode == 0 {
		t.Fatalf("up with a failing start succeeded:\n%s", out)
	}
	// The first error besides the engine's own "update failed" is the
	// root one.
	var first string
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "error: "); i >= 0 && !strings.Contains(line, "error: update failed") {
			first = line[i:]
			break
		}
	}
	if !strings.Contains(out, "start failed: QEMU exited with code 1") || !strings.Contains(first, "error: 1 error occurred") {
		t.Errorf("the first error is %q, want the VM start's:\n%s", first, out)
	}
	for _, noise := range []string{"has a problem", "marshaling properties", "awaiting input property", "context canceled", "client connection is closing"} {
		if strings.Contains(out, noise) {
			t.Errorf("the failed up shows %q:\n%s", noise, out)
		}
	}
	if kc := tcReadOutputs(t, p).Kubeconfig; !strings.Contains(kc, "certificate-authority-data") {
		t.Errorf("the failed up lost the kubeconfig output: %q", kc)
	}
}
