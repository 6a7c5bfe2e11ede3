package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for the provider as the benchmark's own binary
// does (wrap.go): each stack has this binary installed as the provider's plugin.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == providerBinary {
		os.Exit(wrapProvider())
	}
	os.Exit(m.Run())
}

// TestBenchTinyScale runs the whole benchmark once at the smallest scale, as `make test`
// does to keep it working: a 1+1 create, 2-node previews, a 1+1 "large" cluster scaled to
// 1+2, cold start. It checks that every figure was measured (the lab counted requests and
// task polls, the wrapper recorded provider CPU and memory), not how fast anything was.
func TestBenchTinyScale(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	provider := os.Getenv("PROXMOXTALOS_PROVIDER_BIN")
	if provider == "" {
		provider = filepath.Join(root, "bin", providerBinary)
	}
	for _, f := range []string{provider, filepath.Join(root, ".tools", "bin", "pulumi")} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("PROXMOXTALOS_E2E") == "0" {
				t.Skipf("PROXMOXTALOS_E2E=0 and %s is missing: skipping the benchmark", f)
			}
			t.Fatalf("%s is missing: run `make tools provider` (or set PROXMOXTALOS_E2E=0 to skip)", f)
		}
	}
	t.Setenv("PROXMOXTALOS_PROVIDER_BIN", provider)
	out := filepath.Join(t.TempDir(), "benchmarks.md")
	earlier := "## 2026-01-01 10:00 UTC, commit 0000000\n\nan earlier run\n"
	if err := os.WriteFile(out, []byte(reportIntro+"\n"+earlier), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	r, err := run(config{runs: 1, clusters: "1+1", previews: "2", large: "1+1", scaleTo: 2, timeScale: 0,
		out: out, work: work, root: root})
	if err != nil {
		t.Fatal(err)
	}

	if len(r.creates) != 1 || len(r.creates[0].ups) != 1 || len(r.creates[0].destroys) != 1 {
		t.Fatalf("creates: %+v", r.creates)
	}
	up := r.creates[0].ups[0]
	if up.vms != 2 || up.stats.ByKind["POST /nodes/{node}/qemu"] != 2 || up.stats.ByKind[kindTaskStatus] == 0 || len(up.stats.Tasks) < 3 {
		t.Fatalf("the lab's counts of the create: %d VMs, %v, %d tasks", up.vms, up.stats.ByKind, len(up.stats.Tasks))
	}
	// the hosts' storages come from the create's /cluster/resources read
	// (pve.Client.StorageOn), and a VM it started is not asked its status
	for _, kind := range []string{"GET /nodes/{node}/storage", "GET /nodes/{node}/qemu/{vmid}/status/current"} {
		if n := up.stats.ByKind[kind]; n != 0 {
			t.Errorf("the create sent %s %d times, want 0", kind, n)
		}
	}
	if up.m.cpu <= 0 || up.m.rssMiB <= 0 || up.m.wall <= 0 {
		t.Fatalf("the create's provider usage was not recorded: %+v", up.m)
	}
	if p := r.previews; len(p) != 1 || len(p[0].fresh) != 1 || len(p[0].noop) != 1 || p[0].noop[0].stats.Requests == 0 || p[0].noop[0].m.cpu <= 0 ||
		p[0].afterCreate.m.cpu <= 0 || p[0].settle.m.cpu <= 0 {
		t.Fatalf("previews: %+v", p)
	}
	// A no-op preview's steps equal the state, right after the create too (nodes none of
	// whose steps would change anything register as their create did: provider/cluster
	// settled.go), and after a no-op up:
	// the CLI writes none of it (issue 14; provider/cluster gate_preview.go).
	if w := r.previews[0].writesAfterCreate; w != 0 {
		t.Errorf("the first no-op preview after the create made the CLI write the state %d times, want 0 (logs in the work folder's preview-2/logs/*-preview-v9.log)", w)
	}
	if w := r.previews[0].writes; w != 0 {
		t.Errorf("a no-op preview of a settled stack made the CLI write the state %d times, want 0 (logs in the work folder's preview-2/logs/*-preview-v9.log)", w)
	}
	// the -v=9 logs keep the display and the counted records only: the CLI's other records
	// print resources' values, of which the engine masks only those marked secret
	v9, _ := filepath.Glob(filepath.Join(work, "preview-2", "logs", "*-preview-v9.log"))
	if len(v9) != 2 {
		t.Errorf("-v=9 preview logs %v, want the two previews'", v9)
	}
	for _, f := range v9 {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if logRecord.MatchString(line) && !strings.Contains(line, string(mustWriteLine)) {
				t.Errorf("%s keeps a log record other than a state write: %.200s", f, line)
				break
			}
		}
		if !strings.Contains(string(b), "Previewing update") {
			t.Errorf("%s lost the CLI's display", f)
		}
	}
	// the first command that loads the program asks a provider for the schema; later ones
	// take it from the CLI's schema cache, as for a user's installed plugin (stack.go)
	if fresh, noop := r.previews[0].fresh[0].m.procs, r.previews[0].noop[0].m.procs; fresh != 2 || noop != 1 {
		t.Errorf("provider processes: first preview %d, want 2 (schema, preview); no-op preview %d, want 1", fresh, noop)
	}
	if l := r.large; l == nil || l.scale.stats.ByKind["POST /nodes/{node}/qemu"] != 1 || l.destr.stats.ByKind["DELETE /nodes/{node}/qemu/{vmid}"] != 3 {
		t.Fatalf("large cluster: %+v", l)
	}
	if len(r.cold) != 1 || r.cold[0].wall <= 0 || r.cold[0].rssMiB <= 0 {
		t.Fatalf("cold start: %+v", r.cold)
	}
	// peak memory per command kind, from every command of the run: the measured steps'
	// own figures are among them (the no-op previews and the scale-out are measured
	// steps only), the unmeasured ups and destroys of the preview stack count too
	peaks := map[string]float64{
		kindNoop:   max(r.previews[0].noop[0].m.rssMiB, r.previews[0].afterCreate.m.rssMiB, r.large.noop.m.rssMiB),
		kindUpdate: max(r.large.scale.m.rssMiB, r.previews[0].settle.m.rssMiB),
		kindCold:   r.cold[0].rssMiB,
	}
	for kind, want := range peaks {
		if got := r.peaks.get(kind); got != want {
			t.Errorf("peak RSS of %s: %.1f MiB, want %.1f (its measured commands)", kind, got, want)
		}
	}
	for kind, atLeast := range map[string]float64{
		kindCreate:  max(up.m.rssMiB, r.large.create.m.rssMiB),
		kindPreview: r.previews[0].fresh[0].m.rssMiB,
		kindDestroy: max(r.creates[0].destroys[0].m.rssMiB, r.large.destr.m.rssMiB),
	} {
		if got := r.peaks.get(kind); got < atLeast || atLeast <= 0 {
			t.Errorf("peak RSS of %s: %.1f MiB, want at least %.1f (its measured commands)", kind, got, atLeast)
		}
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(md), "# Benchmarks\n"); n != 1 || !strings.HasSuffix(string(md), "\n"+earlier) {
		t.Errorf("the report does not keep the earlier run below the new one:\n%s", md)
	}
	for _, want := range []string{"| create 1+1: up / critical path |", "| create 1+1: status polls per task |",
		"| preview 2 nodes, no changes: provider CPU (s) |", "| large 1+1: create (s) |", "requests per VM by kind",
		"| provider peak RSS, create (up) (MiB) |", "| provider peak RSS, no-op preview (MiB) |", "| provider peak RSS, update (up) (MiB) |",
		"| provider peak RSS, destroy (MiB) |", "| preview 2 nodes, no changes: state writes by the CLI | 0 | 0 |",
		"| preview 2 nodes, first no-op after the create: provider CPU (s) |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the report has no %q:\n%s", want, md)
		}
	}
}
