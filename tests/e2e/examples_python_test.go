package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Python programs run through the Python Automation API (tests/e2e/python/runner.py) in a
// virtualenv under <repo>/.cache/e2e with the pinned tests/e2e/python/requirements.txt.
// Once per test process the Python SDK is built from sdk/python into a wheel and installed
// (--target) into a folder that goes on PYTHONPATH, so the shared virtualenv never changes
// while tests run.

var (
	pyOnce sync.Once
	pyEnv  *pythonEnv
	pyErr  error
)

type pythonEnv struct {
	python string // the virtualenv's interpreter
	site   string // the SDK's install folder, for PYTHONPATH
	runner string // tests/e2e/python
}

func pythonTools(t *testing.T) *pythonEnv {
	t.Helper()
	lookTool(t, "python3", "Python 3.10 or newer with venv")
	repo := harness.RepoRoot(t)
	pyOnce.Do(func() { pyEnv, pyErr = preparePython(repo) })
	if pyErr != nil {
		t.Fatal(pyErr)
	}
	return pyEnv
}

func preparePython(repo string) (*pythonEnv, error) {
	runner := filepath.Join(repo, "tests", "e2e", "python")
	venv := filepath.Join(repo, ".cache", "e2e", "python-venv")
	python := filepath.Join(venv, "bin", "python")
	env := append(os.Environ(), "PIP_CACHE_DIR="+filepath.Join(repo, ".cache", "pip"), "PIP_DISABLE_PIP_VERSION_CHECK=1")
	requirements := filepath.Join(runner, "requirements.txt")
	err := installOnce(filepath.Join(filepath.Dir(venv), "python-venv.installed"), []string{requirements}, func() error {
		if err := os.RemoveAll(venv); err != nil {
			return err
		}
		if _, err := run(repo, env, "python3", "-m", "venv", venv); err != nil {
			return err
		}
		_, err := run(repo, env, python, "-m", "pip", "install", "--quiet", "--prefer-binary", "-r", requirements)
		return err
	})
	if err != nil {
		return nil, err
	}

	// The wheel a user installs, built without network (setuptools is pinned in the venv).
	tmp, err := processTempDir("proxmoxtalos-e2e-python-")
	if err != nil {
		return nil, err
	}
	src := filepath.Join(tmp, "sdk-src")
	if err := copyTree(filepath.Join(repo, "sdk", "python"), src, "build", "__pycache__"); err != nil {
		return nil, err
	}
	site := filepath.Join(tmp, "site")
	if _, err := run(tmp, env, python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "--target", site, src); err != nil {
		return nil, err
	}
	// --no-deps skipped the SDK's requirements: pip check (which sees the SDK through
	// PYTHONPATH) fails when the pinned venv does not satisfy them, or its own pins clash.
	if _, err := run(tmp, append(env, "PYTHONPATH="+site), python, "-m", "pip", "check"); err != nil {
		return nil, fmt.Errorf("the Python SDK's requirements are not met by tests/e2e/python/requirements.txt: %w", err)
	}
	return &pythonEnv{python: python, site: site, runner: runner}, nil
}

// environ is env's process environment with the SDK on PYTHONPATH.
func (p *pythonEnv) environ(env *harness.Env) []string {
	return append(env.Environ(), "PYTHONPATH="+p.site, "PYTHONDONTWRITEBYTECODE=1")
}

// typeCheck runs mypy --strict over Python files or folders.
func (p *pythonEnv) typeCheck(t *testing.T, paths ...string) {
	t.Helper()
	args := append([]string{"-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.DevNull}, paths...)
	env := append(os.Environ(), "PYTHONPATH="+p.site)
	if out, err := run(p.runner, env, p.python, args...); err != nil {
		t.Fatalf("mypy --strict: %v", err)
	} else {
		t.Logf("mypy: %s", strings.TrimSpace(out))
	}
}

// pythonProgram names a program function of an importable module.
type pythonProgram struct {
	Dir    string // folder to import the module from
	Module string // module name; with Export "", a file in Dir to run as __main__
	Export string
}

// pythonStack runs one stack's steps through runner.py, each step in its own process.
type pythonStack struct {
	py      *pythonEnv
	env     *harness.Env
	project string
	program pythonProgram
	config  auto.ConfigMap
	workDir string
}

func newPythonStack(t *testing.T, py *pythonEnv, env *harness.Env, project string, program pythonProgram, config auto.ConfigMap) *pythonStack {
	return &pythonStack{py: py, env: env, project: project, program: program, config: config, workDir: t.TempDir()}
}

// step runs up, preview or destroy; a failed step fails the test.
func (s *pythonStack) step(t *testing.T, step string) stepResult {
	t.Helper()
	spec := stackSpec(s.env, s.project, s.workDir, s.config)
	spec["cliRoot"] = filepath.Dir(s.env.ToolsBin)
	spec["programDir"], spec["programModule"], spec["programExport"] = s.program.Dir, s.program.Module, s.program.Export
	return runnerStep(t, "python", s.project, step, spec, func(specFile string) (string, error) {
		return run(s.workDir, s.py.environ(s.env), s.py.python, filepath.Join(s.py.runner, "runner.py"), specFile)
	})
}

// The Python SDK through the Python Automation API against the lab (the counterpart of
// TestTypeScriptSDKOnLab), after mypy --strict over the runner and the program.
func TestPythonSDKOnLab(t *testing.T) {
	t.Parallel()
	py := pythonTools(t)
	py.typeCheck(t, "runner.py", "smoke.py")
	l := startExampleLab(t)
	env := harness.NewEnv(t)

	cfg := labConfig(l.Conn)
	cfg["proxmoxtalos-py-smoke:host"] = auto.ConfigValue{Value: "pve3"}
	stack := newPythonStack(t, py, env, "proxmoxtalos-py-smoke",
		pythonProgram{Dir: py.runner, Module: "smoke", Export: "smoke"}, cfg)
	checkSmoke(t, l, "pve3", stack.step)
}

// The Python TalosCluster example (examples/python), checked with mypy --strict, then run
// as Pulumi runs the project (its __main__.py, which calls cluster.talos_cluster) inline through the
// Python Automation API against the lab: up, a second preview without changes, destroy
// leaving the lab empty.
func TestExamplePython(t *testing.T) {
	t.Parallel()
	start := time.Now()
	py := pythonTools(t)
	dir := filepath.Join(harness.RepoRoot(t), "examples", "python")
	py.typeCheck(t, filepath.Join(dir, "__main__.py"), filepath.Join(dir, "cluster.py"))
	l := startExampleLab(t)
	env := harness.NewEnv(t)

	const project = "proxmoxtalos-python"
	stack := newPythonStack(t, py, env, project, pythonProgram{Dir: dir, Module: "__main__.py"},
		componentExampleConfig(l, project))
	checkComponentExample(t, l, stack.step)
	t.Logf("TestExamplePython took %s", time.Since(start).Round(time.Millisecond))
}

// The SDK's Python floor (requires-python in sdk/python/pyproject.toml, from pythonRequires in
// provider/languages.go) is not below the floor of the pulumi package it depends on: a lower
// one would let pip pick an interpreter that cannot install pulumi.
func TestPythonSDKFloorCoversPulumi(t *testing.T) {
	t.Parallel()
	py := pythonTools(t)
	pyproject, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "sdk", "python", "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`requires-python = "(.*)"`).FindSubmatch(pyproject)
	if m == nil {
		t.Fatal("sdk/python/pyproject.toml has no requires-python")
	}
	ours := string(m[1])
	theirs, err := run(py.runner, nil, py.python, "-c",
		`import importlib.metadata as m; print(m.metadata("pulumi")["Requires-Python"])`)
	if err != nil {
		t.Fatal(err)
	}
	theirs = strings.TrimSpace(theirs)
	if pythonFloor(t, ours) < pythonFloor(t, theirs) {
		t.Errorf("the Python SDK requires Python %s but pulumi needs %s: raise pythonRequires in provider/languages.go", ours, theirs)
	}
}

// pythonFloor reads ">=3.N" (optionally followed by other clauses) as N.
func pythonFloor(t *testing.T, spec string) int {
	t.Helper()
	m := regexp.MustCompile(`>=\s*3\.(\d+)`).FindStringSubmatch(spec)
	if m == nil {
		t.Fatalf("no >=3.N floor in %q", spec)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
