package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/demo/realtools"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// checkDemoTools runs what `make demo` ends with (tests/demo/realtools, the same
// commands) against the example's cluster: the real talosctl's `get members` through the
// talosconfig output and the real kubectl's `get nodes -o wide` through the kubeconfig
// output, each listing every node of the nodes output with its role and address, Ready.
func checkDemoTools(t *testing.T, talosconfig, kubeconfig string, nodes []tcNode) {
	t.Helper()
	run := func(cmd *exec.Cmd) string {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s%s", strings.Join(cmd.Args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}

	cmd, _, err := realtools.TalosMembers(filepath.Join(harness.ToolsBin(t), "talosctl"), talosconfig, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	members := run(cmd)

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("the demo shows the real kubectl, which is not on PATH: %v", err)
	}
	kcmd, err := realtools.Kubectl(kubectl, kubeconfig, t.TempDir(), realtools.KubectlNodesArgs...)
	if err != nil {
		t.Fatal(err)
	}
	knodes := run(kcmd)

	if n := strings.Count(members, " Member "); n != len(nodes) {
		t.Errorf("talosctl get members lists %d members, want %d:\n%s", n, len(nodes), members)
	}
	for _, n := range nodes {
		// NODE NAMESPACE TYPE ID VERSION HOSTNAME MACHINE TYPE OS ADDRESSES
		member := `(?m)^\S+\s+cluster\s+Member\s+` + regexp.QuoteMeta(n.Name) + `\s+\d+\s+` + regexp.QuoteMeta(n.Name) + `\s+` +
			n.Role + `\s+Talos \(v[0-9.]+\)\s+\["` + regexp.QuoteMeta(n.Address) + `"\]$`
		if !regexp.MustCompile(member).MatchString(members) {
			t.Errorf("talosctl get members has no row for %s (%s, %s):\n%s", n.Name, n.Role, n.Address, members)
		}
		role := "<none>"
		if n.Role == "controlplane" {
			role = "control-plane"
		}
		// NAME STATUS ROLES AGE VERSION INTERNAL-IP ...
		node := `(?m)^` + regexp.QuoteMeta(n.Name) + `\s+Ready\s+` + role + `\s+\S+\s+v[0-9.]+\s+` + regexp.QuoteMeta(n.Address) + `\s`
		if !regexp.MustCompile(node).MatchString(knodes) {
			t.Errorf("kubectl get nodes -o wide has no Ready row for %s (%s, %s):\n%s", n.Name, role, n.Address, knodes)
		}
	}
}
