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

// The TypeScript TalosCluster example (examples/typescript), type-checked with its own
// tsconfig.json and --strict, then run as Pulumi runs the project: the function index.ts
// exports, inline through the Node.js Automation API against the lab. up, a second preview
// without changes, destroy leaving the lab empty.
func TestExampleTypeScript(t *testing.T) {
	t.Parallel()
	start := time.Now()
	root := nodeRoot(t)
	out := compileTypeScript(t, root, filepath.Join(harness.RepoRoot(t), "examples", "typescript"), "example-typescript")
	l := startExampleLab(t)
	env := harness.NewEnv(t)

	const project = "proxmoxtalos-typescript"
	stack := newNodeStack(t, root, env, project, nodeProgram{Module: filepath.Join(out, "index.js")}, componentExampleConfig(l, project))
	checkComponentExample(t, l, stack.step)
	t.Logf("TestExampleTypeScript took %s", time.Since(start).Round(time.Millisecond))
}
