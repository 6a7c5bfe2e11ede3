package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// The Node.js SDK through the Node.js Automation API against the lab: offline invokes, a
// resource with secret outputs, an enum input and a file downloaded onto a Proxmox node;
// a second preview changes nothing and destroy removes the file. The runner and the
// program are compiled with tsc --strict.
func TestTypeScriptSDKOnLab(t *testing.T) {
	t.Parallel()
	start := time.Now()
	root := nodeRoot(t)
	t.Logf("node toolchain and SDK ready after %s", time.Since(start).Round(time.Millisecond))
	l := startExampleLab(t)
	env := harness.NewEnv(t)

	cfg := labConfig(l.Conn)
	cfg["proxmoxtalos-ts-smoke:host"] = auto.ConfigValue{Value: "pve2"}
	stack := newNodeStack(t, root, env, "proxmoxtalos-ts-smoke",
		nodeProgram{Module: filepath.Join(root, "runner", "bin", "smoke.js"), Export: "smoke"}, cfg)
	checkSmoke(t, l, "pve2", stack.step)
}
