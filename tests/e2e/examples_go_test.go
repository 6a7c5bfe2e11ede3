package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"

	"github.com/proxmoxtalos/proxmoxtalos/examples/go/cluster"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// componentExampleConfig is the stack configuration of the TalosCluster examples for a
// lab: nodes allocated from .11-.30 of the lab's block, the VIP at .10, one worker.
func componentExampleConfig(l *exampleLab, project string) auto.ConfigMap {
	cfg := exampleClusterConfig(l, project)
	cfg[project+":addressRangeStart"] = auto.ConfigValue{Value: l.addr(11)}
	cfg[project+":addressRangeEnd"] = auto.ConfigValue{Value: l.addr(30)}
	cfg[project+":workerCount"] = auto.ConfigValue{Value: "1"}
	cfg[project+":imageFactoryUrl"] = auto.ConfigValue{Value: l.FactoryURL()}
	return cfg
}

// The Go TalosCluster example (examples/go), its Program run inline through the Go
// Automation API against the lab: up, a second preview without changes, destroy.
func TestExampleGo(t *testing.T) {
	t.Parallel()
	start := time.Now()
	l := startExampleLab(t)
	env := harness.NewEnv(t)
	const project = "proxmoxtalos-go"
	stack := harness.InlineStack(t, env, project, cluster.Program, nil)
	ctx := context.Background()
	if err := stack.SetAllConfig(ctx, componentExampleConfig(l, project)); err != nil {
		t.Fatal(err)
	}

	up, err := stack.Up(ctx, optup.ProgressStreams(testWriter{t}))
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("up took %s", time.Since(start).Round(time.Millisecond))
	checkClusterOutputs(t, l, up.Outputs, 4)

	checkUnchangedThenDestroy(t, l, stack)
	t.Logf("TestExampleGo took %s", time.Since(start).Round(time.Millisecond))
}

// checkUnchangedThenDestroy is the end of a Go example's run after up: a second
// preview changes nothing, and destroy leaves the lab empty.
func checkUnchangedThenDestroy(t *testing.T, l *exampleLab, stack auto.Stack) {
	t.Helper()
	ctx := context.Background()
	preview, err := stack.Preview(ctx, optpreview.ExpectNoChanges())
	if err != nil {
		t.Fatalf("second preview: %v", err)
	}
	if changed := changes(opCounts(preview.ChangeSummary)); changed != "" {
		t.Errorf("second preview reports changes: %s", changed)
	}
	if _, err := stack.Destroy(ctx, optdestroy.ProgressStreams(testWriter{t})); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	l.requireEmpty(t)
}

// The Go examples are modules of their own, as a user builds them (pulumi up runs go build
// in the folder): their main packages and go.mod/go.sum must build and vet there. The tests
// above import only their cluster packages, through tests/e2e/go.mod.
func TestGoExamplesBuildAsModules(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"go", "go-resources", "go-composition"} {
		dir := filepath.Join(harness.RepoRoot(t), "examples", name)
		// The caller's GOFLAGS stay (the Makefile's -trimpath): the examples' dependencies
		// then come from the build cache the other tests filled instead of compiling again.
		env := append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly"), "GOWORK=off")
		for _, args := range [][]string{{"build", "-o", os.DevNull, "."}, {"vet", "./..."}} {
			if _, err := run(dir, env, "go", args...); err != nil {
				t.Errorf("examples/%s: %v", name, err)
			}
		}
	}
}
