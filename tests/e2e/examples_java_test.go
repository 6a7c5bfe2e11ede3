package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// javaBuild is the Java example compiled against the Java SDK, with the runner
// (tests/e2e/java/Runner.java) compiled beside it.
type javaBuild struct {
	classpath string // the example's dependencies, its classes and the runner's
}

// buildJava installs the Java SDK with Maven into the local repository under
// <repo>/.cache/m2 (as `mvn install` in sdk/java does for a user), compiles the Java example
// against it and com.pulumi:pulumi from Maven Central, and compiles the runner against the
// example's classpath. Once both poms' dependencies have been fetched, Maven runs offline
// (-o). Everything is built from copies, so nothing is written into the repository.
func buildJava(t *testing.T) javaBuild {
	t.Helper()
	lookTool(t, "mvn", "Maven 3")
	lookTool(t, "javac", "a JDK 11 or newer")
	repo := harness.RepoRoot(t)
	m2 := filepath.Join(repo, ".cache", "m2")

	// The stamp covers the poms and the goals below: a new goal may need a plugin not fetched yet.
	const goals = "install -DskipTests; compile dependency:build-classpath"
	h := sha256.New()
	h.Write([]byte(goals))
	for _, f := range []string{filepath.Join(repo, "sdk", "java", "pom.xml"), filepath.Join(repo, "examples", "java", "pom.xml")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	stamp := filepath.Join(m2, ".examples-java-"+hex.EncodeToString(h.Sum(nil))[:16])
	mvn := []string{"-B", "-q", "-Dstyle.color=never", "-Dmaven.repo.local=" + m2}
	if _, err := os.Stat(stamp); err == nil {
		mvn = append(mvn, "-o")
	}

	sdk := filepath.Join(t.TempDir(), "sdk-java")
	if err := copyTree(filepath.Join(repo, "sdk", "java"), sdk, "target", "build"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(sdk, nil, "mvn", append(mvn, "install", "-DskipTests")...); err != nil {
		t.Fatalf("installing the Java SDK into %s: %v", m2, err)
	}

	example := filepath.Join(t.TempDir(), "example-java")
	if err := copyTree(filepath.Join(repo, "examples", "java"), example, "target"); err != nil {
		t.Fatal(err)
	}
	cpFile := filepath.Join(example, "classpath.txt")
	if _, err := run(example, nil, "mvn", append(mvn, "compile", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile)...); err != nil {
		t.Fatalf("compiling examples/java: %v", err)
	}
	classes := filepath.Join(example, "target", "classes")
	if _, err := os.Stat(filepath.Join(classes, "proxmoxtalos", "example", "App.class")); err != nil {
		t.Fatalf("mvn compile produced no App.class: %v", err)
	}
	deps, err := os.ReadFile(cpFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	runner := filepath.Join(t.TempDir(), "runner")
	cp := strings.TrimSpace(string(deps)) + string(os.PathListSeparator) + classes
	if _, err := run(repo, nil, "javac", "-Xlint:all", "-Werror", "-cp", cp, "-d", runner, filepath.Join(repo, "tests", "e2e", "java", "Runner.java")); err != nil {
		t.Fatalf("compiling the Java runner: %v", err)
	}
	return javaBuild{classpath: cp + string(os.PathListSeparator) + runner}
}

// javaStack runs one stack's steps through Runner.java, each step in its own JVM.
type javaStack struct {
	build   javaBuild
	env     *harness.Env
	project string
	class   string // the program's class; its public static stack(Context) is the program
	config  auto.ConfigMap
	workDir string
}

// step runs up, preview or destroy; a failed step fails the test.
func (s *javaStack) step(t *testing.T, step string) stepResult {
	t.Helper()
	spec := stackSpec(s.env, s.project, s.workDir, s.config)
	spec["programClass"], spec["programMethod"] = s.class, "stack"
	return runnerStep(t, "java", s.project, step, spec, func(specFile string) (string, error) {
		// The Java Automation API finds the CLI on PATH: Environ puts .tools/bin first.
		return run(s.workDir, s.env.Environ(), "java", "-cp", s.build.classpath, "proxmoxtalos.e2e.Runner", specFile)
	})
}

// The Java TalosCluster example (examples/java): the SDK installed and the example compiled
// with Maven, then App.stack run inline through the Java Automation API against the lab:
// up, a second preview without changes, destroy leaving the lab empty.
func TestExampleJava(t *testing.T) {
	t.Parallel()
	start := time.Now()
	build := buildJava(t)
	t.Logf("Java SDK and example built after %s", time.Since(start).Round(time.Millisecond))
	l := startExampleLab(t)
	env := harness.NewEnv(t)

	const project = "proxmoxtalos-java"
	stack := &javaStack{build: build, env: env, project: project, class: "proxmoxtalos.example.App",
		config: componentExampleConfig(l, project), workDir: t.TempDir()}
	checkComponentExample(t, l, stack.step)
	t.Logf("TestExampleJava took %s", time.Since(start).Round(time.Millisecond))
}
