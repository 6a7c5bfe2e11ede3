package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// The Java SDK, installed with Maven into the local repository under <repo>/.cache/m2 (as
// `mvn install` in sdk/java does for a user), and the Java example compiled against it and
// com.pulumi:pulumi from Maven Central. Once both poms' dependencies have been fetched, the
// builds run offline (-o). Both are built from copies, so nothing is written into the
// repository.
func TestExampleJavaCompiles(t *testing.T) {
	t.Parallel()
	start := time.Now()
	lookTool(t, "mvn", "Maven 3")
	lookTool(t, "java", "a JDK 11 or newer")
	repo := harness.RepoRoot(t)
	m2 := filepath.Join(repo, ".cache", "m2")

	h := sha256.New()
	for _, f := range []string{filepath.Join(repo, "sdk", "java", "pom.xml"), filepath.Join(repo, "examples", "java", "pom.xml")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	stamp := filepath.Join(m2, ".examples-java-"+hex.EncodeToString(h.Sum(nil))[:16])
	args := []string{"-B", "-q", "-Dstyle.color=never", "-Dmaven.repo.local=" + m2}
	if _, err := os.Stat(stamp); err == nil {
		args = append(args, "-o")
	}

	sdk := filepath.Join(t.TempDir(), "sdk-java")
	if err := copyTree(filepath.Join(repo, "sdk", "java"), sdk, "target", "build"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(sdk, nil, "mvn", append(args, "install", "-DskipTests")...); err != nil {
		t.Fatalf("installing the Java SDK into %s: %v", m2, err)
	}
	t.Logf("Java SDK installed after %s", time.Since(start).Round(time.Millisecond))

	example := filepath.Join(t.TempDir(), "example-java")
	if err := copyTree(filepath.Join(repo, "examples", "java"), example, "target"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(example, nil, "mvn", append(args, "compile")...); err != nil {
		t.Fatalf("compiling examples/java: %v", err)
	}
	if _, err := os.Stat(filepath.Join(example, "target", "classes", "proxmoxtalos", "example", "App.class")); err != nil {
		t.Fatalf("mvn compile produced no App.class: %v", err)
	}
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("TestExampleJavaCompiles took %s", time.Since(start).Round(time.Millisecond))
}
