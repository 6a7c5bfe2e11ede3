package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/leakscan"
)

// secretInputsProgram: a one-node cluster whose patch (a node label, a key
// no redaction rule knows) and registry mirror password are Pulumi secrets
// from the stack's configuration.
func secretInputsProgram(l *tcLab) string {
	return fmt.Sprintf(`config:
  labelPatch:
    type: string
    secret: true
  mirrorPassword:
    type: string
    secret: true
resources:
  cluster:
    type: proxmoxtalos:TalosCluster
    properties:
      clusterName: secretin
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
      registryMirrors:
        docker.io:
          endpoints: [ "https://mirror.example.com:5000" ]
          auth: { username: puller, password: "${mirrorPassword}" }
outputs:
  summary: ${cluster.summary}
  talosconfig: ${cluster.talosconfig}
`, l.FactoryURL(), l.AddressBlock(), l.addr(1), l.addr(10), l.addr(14))
}

func labelPatch(value string) string {
	return "machine:\n  nodeLabels:\n    note: " + value + "\n"
}

// Issue 15: a secret patch and secret registry credentials, end to end
// (up, no-change preview, an update that rotates both, destroy): accepted
// (was "failed to copy inputs"), on the node, and in plain text nowhere:
// not in the CLI's text or JSON output, the provider's logs, the preview's
// view of the changed paths, or the stack's state.
func TestClusterSecretPatchAndRegistryAuth(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "secretin", secretInputsProgram(l))
	p.ConfigureLab(t, l.conn)
	const label1, label2 = "e2e-label-secret-value-one", "e2e-label-secret-value-two"
	const pass1, pass2 = "e2e-mirror-password-one", "e2e-mirror-password-two"
	p.SetConfig(t, "labelPatch", labelPatch(label1), true)
	p.SetConfig(t, "mirrorPassword", pass1, true)

	var outputs []scanned
	step := func(what string, r harness.Result) harness.Result {
		t.Helper()
		stderr := r.Stderr
		if strings.Contains(strings.Join(r.Args, " "), "--logflow") {
			stderr = withoutRPCDumps(stderr)
		}
		outputs = append(outputs, scanned{what + " stdout", r.Stdout}, scanned{what + " stderr", stderr})
		return r
	}

	step("preview", mustOK(t, "preview", p.Preview(t, "--diff")))
	step("up", mustOK(t, "up", p.Up(t, append([]string{"--json"}, verbose...)...)))
	step("preview after up", mustOK(t, "preview after up", p.Preview(t, "--expect-no-changes", "--diff")))

	// The node runs both (its machine configuration, read through the Talos API).
	running := func() string {
		t.Helper()
		creds := tcCredentials(t, strings.TrimSpace(p.MustRun(t, "stack", "output", "talosconfig", "--show-secrets").Stdout))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		nc, _, _, err := talosapi.ReadConfig(ctx, talosapi.Target{Node: l.addr(10), Creds: creds}, talosapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return string(nc.Active)
	}
	cfg := running()
	for _, want := range []string{"note: " + label1, "mirror.example.com:5000:", "password: " + pass1} {
		if !strings.Contains(cfg, want) {
			t.Errorf("the node's configuration lacks %q", want)
		}
	}

	// Rotating both: the preview shows which paths change, redacted.
	p.SetConfig(t, "labelPatch", labelPatch(label2), true)
	p.SetConfig(t, "mirrorPassword", pass2, true)
	r := step("rotate preview", mustOK(t, "rotate preview", p.Preview(t, "--diff")))
	for _, path := range []string{"machine.nodeLabels.note", `machine.registries.config["mirror.example.com:5000"].auth.password`} {
		re := regexp.MustCompile(`(?m)^\s*~ ` + regexp.QuoteMeta(path) + `\s*: "\(sensitive[^"]*\)" => "\(sensitive[^"]*\)"$`)
		if !re.MatchString(r.Stdout) {
			t.Errorf("the rotation's preview does not show %s changed and redacted", path)
		}
	}
	step("rotate up", mustOK(t, "rotate up", p.Up(t, append([]string{"--json", "--diff"}, verbose...)...)))
	if cfg := running(); !strings.Contains(cfg, "note: "+label2) || !strings.Contains(cfg, "password: "+pass2) {
		t.Errorf("the rotated values did not reach the node")
	}

	set, err := leakscan.FromExport([]byte(p.MustRun(t, "stack", "export", "--show-secrets").Stdout))
	if err != nil {
		t.Fatal(err)
	}
	for origin, value := range map[string]string{
		"the first label": label1, "the second label": label2, "the first mirror password": pass1, "the second mirror password": pass2,
	} {
		set.Add(origin, value)
	}
	outputs = append(outputs, scanned{"stack export", p.StackExport(t)})
	if dir := os.Getenv("LEAKSCAN_DUMP"); dir != "" {
		for i, o := range outputs {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("secretin-%02d.txt", i)), []byte(o.name+"\n"+o.text), 0o600)
		}
	}
	step("destroy", mustOK(t, "destroy", p.Destroy(t)))
	needles := set.Needles()
	for _, o := range outputs {
		for _, f := range leakscan.Scan(o.name, o.text, needles) {
			t.Errorf("leak: %s", f)
		}
	}
	if vms := l.VMs(); len(vms) != 0 {
		t.Errorf("VMs after destroy: %+v", vms)
	}
}
