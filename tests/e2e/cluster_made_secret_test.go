package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/leakscan"
)

// madeSecretProgram: a one-node cluster whose label patch comes from the stack's
// configuration, plain or secret as the test sets it.
func madeSecretProgram(l *tcLab) string {
	return fmt.Sprintf(`config:
  labelPatch:
    type: string
resources:
  cluster:
    type: proxmoxtalos:TalosCluster
    properties:
      clusterName: madesecret
      talosVersion: v1.12.5
      kubernetesVersion: v1.34.1
      image: { factoryUrl: %[1]s }
      hosts: [{ node: pve1 }]
      network:
        subnet: %[2]s
        gateway: %[3]s
        addressRange: { start: %[4]s, end: %[5]s }
      controlPlane: { count: 1 }
      patches: [ "${labelPatch}" ]
`, l.FactoryURL(), l.AddressBlock(), l.addr(1), l.addr(10), l.addr(14))
}

// Issue 15: a value that was plain and becomes a secret without changing (the
// user runs `pulumi config set --secret` with the same text). The preview shows
// the node's ConfigurationApply updating its sensitiveValues (nothing else), the
// update leaves the node alone, and afterwards the stack's state holds the value
// in plain text nowhere: the stored configView, which showed it, is redacted
// (was: unchanged until the configuration itself changed).
func TestClusterValueMadeSecret(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "madesecret", madeSecretProgram(l))
	p.ConfigureLab(t, l.conn)
	const label = "e2e-label-made-secret-later"
	p.SetConfig(t, "labelPatch", labelPatch(label), false)
	mustOK(t, "up", p.Up(t))
	if !strings.Contains(p.StackExport(t), label) {
		t.Fatalf("the plain label is not in the state before it is made secret: the test proves nothing")
	}

	p.SetConfig(t, "labelPatch", labelPatch(label), true)
	pre := mustOK(t, "preview", p.Preview(t, "--diff"))
	if !strings.Contains(pre.Stdout, "proxmoxtalos:talos:ConfigurationApply: (update)") || !strings.Contains(pre.Stdout, "sensitiveValues") {
		t.Errorf("the preview does not show the apply's sensitiveValues updating:\n%s", pre.Stdout)
	}
	if strings.Contains(pre.Stdout, "configView") || strings.Contains(pre.Stdout, "VirtualMachine: (update)") {
		t.Errorf("the preview shows more than sensitiveValues changing:\n%s", pre.Stdout)
	}
	up := mustOK(t, "up", p.Up(t))
	if strings.Contains(up.Stdout, "applying") {
		t.Logf("up output:\n%s", up.Stdout)
	}
	mustOK(t, "preview after up", p.Preview(t, "--expect-no-changes"))

	set, err := leakscan.FromExport([]byte(p.MustRun(t, "stack", "export", "--show-secrets").Stdout))
	if err != nil {
		t.Fatal(err)
	}
	set.Add("the label made secret", label)
	for _, f := range leakscan.Scan("stack export", p.StackExport(t), set.Needles()) {
		t.Errorf("leak: %s", f)
	}
	mustOK(t, "destroy", p.Destroy(t))
}
