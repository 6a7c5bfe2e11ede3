package e2e

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// TypeScript programs run through the Node.js Automation API (tests/e2e/node/runner.ts).
// Once per test process, a folder is prepared whose node_modules holds the runner's
// pinned packages (tests/e2e/node/package-lock.json) and the Node.js SDK compiled from
// sdk/nodejs, as its npm package would install it. Programs are copied below that folder,
// so @pulumi/pulumi resolves to one copy for the program, the SDK and the runner.

var (
	nodeOnce    sync.Once
	nodeRootDir string
	nodeErr     error
)

// nodeRoot returns the prepared folder; its runner/ holds the compiled runner.
func nodeRoot(t *testing.T) string {
	t.Helper()
	lookTool(t, "node", "Node.js 20 or newer")
	lookTool(t, "npm", "npm")
	repo := harness.RepoRoot(t)
	nodeOnce.Do(func() { nodeRootDir, nodeErr = prepareNode(repo) })
	if nodeErr != nil {
		t.Fatal(nodeErr)
	}
	return nodeRootDir
}

func prepareNode(repo string) (string, error) {
	runnerSrc := filepath.Join(repo, "tests", "e2e", "node")
	deps := filepath.Join(runnerSrc, "node_modules")
	env := append(os.Environ(), "npm_config_cache="+filepath.Join(repo, ".cache", "npm"))
	err := installOnce(filepath.Join(deps, ".proxmoxtalos-installed"), []string{filepath.Join(runnerSrc, "package-lock.json")}, func() error {
		_, err := run(runnerSrc, env, "npm", "ci", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
		return err
	})
	if err != nil {
		return "", err
	}

	root, err := processTempDir("proxmoxtalos-e2e-node-")
	if err != nil {
		return "", err
	}
	modules := filepath.Join(root, "node_modules")
	if err := os.MkdirAll(modules, 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(deps)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(deps, e.Name()), filepath.Join(modules, e.Name())); err != nil {
			return "", err
		}
	}

	// The SDK, compiled with its own tsconfig.json into node_modules/@proxmoxtalos/proxmoxtalos
	// beside its package.json: the layout of its published npm package.
	sdkSrc := filepath.Join(root, "sdk-src")
	if err := copyTree(filepath.Join(repo, "sdk", "nodejs"), sdkSrc, "node_modules", "bin"); err != nil {
		return "", err
	}
	pkg := filepath.Join(modules, "@proxmoxtalos", "proxmoxtalos")
	if _, err := run(sdkSrc, nil, "node", tsc(deps), "-p", "tsconfig.json", "--outDir", pkg); err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(sdkSrc, "package.json"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), b, 0o644); err != nil {
		return "", err
	}

	runner := filepath.Join(root, "runner")
	if err := copyTree(runnerSrc, runner, "node_modules"); err != nil {
		return "", err
	}
	if _, err := run(runner, nil, "node", tsc(deps), "-p", "tsconfig.json"); err != nil {
		return "", err
	}
	return root, nil
}

func tsc(deps string) string { return filepath.Join(deps, "typescript", "bin", "tsc") }

// compileTypeScript copies a TypeScript project (an example folder) below the node root and
// compiles it with its own tsconfig.json and --strict; it returns the output folder.
func compileTypeScript(t *testing.T, root, src, name string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := copyTree(src, dir, "node_modules", "bin"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bin")
	if o, err := run(dir, nil, "node", tsc(filepath.Join(root, "node_modules")), "-p", "tsconfig.json", "--strict", "--outDir", out); err != nil {
		t.Fatalf("tsc --strict over %s: %v", src, err)
	} else if o != "" {
		t.Logf("tsc: %s", o)
	}
	return out
}

// nodeProgram names an exported program function of a compiled module.
type nodeProgram struct {
	Module string // absolute path of the compiled .js file
	Export string // "" when module.exports is the function (export = f)
}

// nodeStack runs one stack's steps through runner.js, each step in its own node process.
type nodeStack struct {
	root    string
	env     *harness.Env
	project string
	program nodeProgram
	config  auto.ConfigMap
	workDir string
}

func newNodeStack(t *testing.T, root string, env *harness.Env, project string, program nodeProgram, config auto.ConfigMap) *nodeStack {
	return &nodeStack{root: root, env: env, project: project, program: program, config: config, workDir: t.TempDir()}
}

// step runs up, preview or destroy; a failed step fails the test.
func (s *nodeStack) step(t *testing.T, step string) stepResult {
	t.Helper()
	spec := stackSpec(s.env, s.project, s.workDir, s.config)
	spec["cliRoot"] = filepath.Dir(s.env.ToolsBin)
	spec["programModule"], spec["programExport"] = s.program.Module, s.program.Export
	return runnerStep(t, "node", s.project, step, spec, func(specFile string) (string, error) {
		return run(s.root, s.env.Environ(), "node", filepath.Join(s.root, "runner", "bin", "runner.js"), specFile)
	})
}
