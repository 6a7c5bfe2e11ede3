package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// labConfig is the provider configuration for a lab, as stack config.
func labConfig(l harness.Lab) auto.ConfigMap {
	return auto.ConfigMap{
		"proxmoxtalos:endpoint": {Value: l.Endpoint},
		"proxmoxtalos:apiToken": {Value: l.APIToken, Secret: true},
		"proxmoxtalos:caCert":   {Value: l.CACert},
	}
}

// The Node.js SDK through the Node.js Automation API against the lab: offline invokes, a
// resource with secret outputs, an enum input and a file downloaded onto a Proxmox node;
// a second preview changes nothing and destroy removes the file.
func TestTypeScriptSDKOnLab(t *testing.T) {
	t.Parallel()
	start := time.Now()
	root := nodeRoot(t)
	t.Logf("node toolchain and SDK ready after %s", time.Since(start).Round(time.Millisecond))
	l := startExampleLab(t, nil)
	env := harness.NewEnv(t)

	cfg := labConfig(l.Conn)
	cfg["proxmoxtalos-ts-smoke:host"] = auto.ConfigValue{Value: "pve2"}
	stack := newNodeStack(t, root, env, "proxmoxtalos-ts-smoke",
		nodeProgram{Module: filepath.Join(root, "runner", "bin", "smoke.js"), Export: "smoke"}, cfg)

	up := stack.step(t, "up")
	if up.ResourceChanges["create"] != 3 {
		t.Errorf("up created %v, want 3 (the stack, DownloadFile, MachineSecrets)", up.ResourceChanges)
	}
	for _, k := range []string{"machineSecrets", "talosconfig"} {
		if o, ok := up.Outputs[k]; !ok || !o.Secret {
			t.Errorf("output %s is missing or not secret: %+v", k, ok)
		}
	}
	if got, _ := up.Outputs["talosconfig"].Value.(string); !strings.Contains(got, "192.0.2.10") || !strings.Contains(got, "context: smoke") {
		t.Errorf("talosconfig output does not name the endpoint and context given")
	}
	// The ID of the schematic with only siderolabs/qemu-guest-agent (pitfalls.md).
	if got := up.Outputs["schematicId"].Value; got != "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515" {
		t.Errorf("schematicId = %v, want the qemu-guest-agent schematic's ID", got)
	}
	volume, _ := up.Outputs["volumeId"].Value.(string)
	if volume != "local:iso/talos-v1.12.5-nocloud-amd64.iso" {
		t.Errorf("volumeId = %q, want local:iso/talos-v1.12.5-nocloud-amd64.iso", volume)
	}
	if got := l.volumes(); len(got) != 1 || got[0] != "pve2/"+volume {
		t.Errorf("lab volumes after up = %v, want only pve2/%s", got, volume)
	}

	preview := stack.step(t, "preview")
	if changed := changes(preview.ChangeSummary); changed != "" {
		t.Errorf("second preview reports changes: %s", changed)
	}

	destroy := stack.step(t, "destroy")
	if destroy.ResourceChanges["delete"] != 3 {
		t.Errorf("destroy deleted %v, want 3 (the stack and its 2 resources)", destroy.ResourceChanges)
	}
	l.requireEmpty(t)
	t.Logf("TestTypeScriptSDKOnLab took %s", time.Since(start).Round(time.Millisecond))
}

// changes lists the non-"same" entries of a change summary, "" when there are none.
func changes(summary map[string]int) string {
	var out []string
	for op, n := range summary {
		if op != "same" && n > 0 {
			out = append(out, op+"="+strconv.Itoa(n))
		}
	}
	return strings.Join(out, " ")
}

