package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/killpoint"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// The fault campaign (issue 10): seeded runs of a 3+2 TalosCluster through
// create, scale-out, Talos upgrade and destroy, each with one kind of
// Proxmox fault at a given rate. Every step may take two `up`s; after each,
// the lab must hold exactly the stack's VMs: no orphan, no VMID claimed
// twice, no second VM on a name or address, and etcd never lost quorum.
//
// `make soak` runs the whole campaign (PROXMOXTALOS_SOAK=full, 20 seeds per
// kind and rate, SOAK_RUNS and SOAK_PARALLEL to change) and prints the
// table; `make test` runs one 500s run and one kill run to keep it working.
//
// The kill runs kill, at each point, either the provider or the `pulumi`
// CLI that started it (the hook in the provider kills its parent), by the
// seed's parity: even seeds the provider, odd ones the CLI, so the kill runs
// cover every kill point with both targets. `make test`'s one kill run
// (seed 9100) kills both, one step each: the CLI in create and upgrade, the
// provider in scale-out and destroy. A run that kills the CLI uses a file
// backend without metadata sidecars (harness.Env.KillSafe): with them, a
// CLI killed while gocloud's fileblob rewrites the stack file's `.attrs`
// sidecar in place leaves it empty, and every later command fails with
// "failed to load checkpoint: EOF" (seen once in 13 CLI kills; Pulumi's
// backend, not this provider: docs/resources.md).

// soakKind is one kind of fault, at a rate, or (kill set) the provider or
// the CLI killed once in each step.
type soakKind struct {
	name   string
	faults func(rate float64, seed int64) pve.Faults
	// kill, for the kill runs, names the kill point (provider/killpoint)
	// of each step's first run; the run'th of each step's list.
	kill [][]string
}

var soakKinds = []soakKind{
	{"500", func(r float64, _ int64) pve.Faults { return pve.Faults{ServerErrorRate: r} }, nil},
	{"task", func(r float64, _ int64) pve.Faults { return pve.Faults{TaskFailureRate: r} }, nil},
	{"lock-timeout", func(r float64, _ int64) pve.Faults { return pve.Faults{LockTimeoutRate: r} }, nil},
	{"scripted", scriptedFaults, nil},
	{"kill", func(float64, int64) pve.Faults { return pve.Faults{} }, soakKillPoints},
}

// soakKillPoints are, per step, the points at which a kill run kills the
// provider or the CLI (SIGKILL, no cleanup): the kill runs together kill each step at
// each of its points once. "#2": the second time any node reaches it.
var soakKillPoints = [][]string{
	{"after-download-started", "after-vmid-allocation", "after-create-task-started#2", "after-config",
		"after-start#3", "after-hand-over#4", "after-config-applied#2", "after-bootstrap"},
	{"after-vmid-allocation", "after-create-task-started", "after-start", "after-hand-over", "after-config-applied"},
	{"after-upgrade-accepted", "after-upgrade-accepted#3", "after-config-applied"},
	{"after-reset-accepted", "after-reset-accepted#3", "after-destroy-task-started", "after-destroy-task-started#4"},
}

// killRuns is how many kill runs cover every point of every step once
// (per target: twice as many cover both).
func killRuns(points [][]string) int {
	n := 0
	for _, p := range points {
		n = max(n, len(p))
	}
	return n
}

// scriptedFaults draws, from the seed, the lab's deterministic faults at
// rate r: each of the first calls that start, create or clone a VM or
// download a file loses its answer (the call did its work, the client saw
// an error) with probability r, each qmstart task fails for a passing cause
// with probability r, and with probability r per step a Proxmox node loses
// power for a few seconds during it.
func scriptedFaults(r float64, seed int64) pve.Faults {
	rnd := rand.New(rand.NewPCG(uint64(seed), 0x50a))
	var rules []pve.FaultRule
	for _, call := range []string{
		"POST /nodes/{node}/qemu/{vmid}/status/start",
		"POST /nodes/{node}/qemu",
		"POST /nodes/{node}/storage/{storage}/download-url",
	} {
		for nth := 1; nth <= 12; nth++ {
			if rnd.Float64() < r {
				rules = append(rules, pve.FaultRule{Call: call, Nth: nth, Lost: true})
			}
		}
	}
	for nth := 1; nth <= 12; nth++ {
		if rnd.Float64() < r {
			rules = append(rules, pve.FaultRule{Task: "qmstart", Nth: nth})
		}
	}
	for step := range 4 {
		if rnd.Float64() < r {
			rules = append(rules, pve.FaultRule{PowerOff: fmt.Sprintf("pve%d", 1+rnd.IntN(3)),
				After: time.Duration(step*20+rnd.IntN(15)) * time.Second, For: 3 * time.Second})
		}
	}
	return pve.Faults{Script: rules}
}

// soakRun is the outcome of one run.
type soakRun struct {
	kind string
	rate float64
	seed int64
	// ups are the `up`s (or destroys) each step took; 0: it did not
	// converge within two.
	ups                                         []int
	points                                      []string // kill runs: where each step was killed
	notes                                       []string
	orphans, dupVMIDs, dupVMs, dupAddrs, losses int
	// offLosses are quorum losses while a host that ran a down member was
	// powered off by the fault script (the deliberate ones)
	offLosses int
	took      time.Duration
	failure   string
}

func (r soakRun) converged(within int) bool {
	for _, n := range r.ups {
		if n == 0 || n > within {
			return false
		}
	}
	return len(r.ups) == len(soakSteps)
}

// soakSteps are what every run does to its cluster.
var soakSteps = []string{"create 3+2", "scale workers to 3", "Talos v1.12.5 → v1.12.6", "destroy"}

func TestSoak(t *testing.T) {
	t.Parallel()
	full := os.Getenv("PROXMOXTALOS_SOAK") == "full"
	// make test: one run of Proxmox 500s and one kill run, which kills the
	// CLI or the provider once in each step of the TalosCluster's life
	// (create, scale, upgrade, destroy; killTargetBoth)
	runs, parallel := 1, 2
	kinds, rates := []soakKind{soakKinds[0], soakKinds[len(soakKinds)-1]}, []float64{0.05}
	if full {
		runs, parallel, kinds, rates = 20, 1, soakKinds, []float64{0.05, 0.15}
	}
	if os.Getenv("SOAK_RATES") != "" {
		rates = nil
		for _, r := range strings.Split(os.Getenv("SOAK_RATES"), ",") {
			v, err := strconv.ParseFloat(r, 64)
			if err != nil || v <= 0 || v >= 1 {
				t.Fatalf("SOAK_RATES=%q: want fractions like 0.05,0.15", os.Getenv("SOAK_RATES"))
			}
			rates = append(rates, v)
		}
	}
	runs = envInt(t, "SOAK_RUNS", runs)
	parallel = envInt(t, "SOAK_PARALLEL", parallel)
	if k := os.Getenv("SOAK_KINDS"); k != "" {
		kinds = slices.DeleteFunc(slices.Clone(soakKinds), func(s soakKind) bool { return !slices.Contains(strings.Split(k, ","), s.name) })
	}

	seeds := soakSeeds(t, runs)
	runs = len(seeds)

	type job struct {
		kind soakKind
		rate float64
		seed int64
		run  int
		// target: kill runs, "cli" or "provider"
		target string
	}
	var jobs []job
	for _, k := range kinds {
		if k.kill != nil { // no rate: each run kills every step once
			// killRuns per target cover every kill point; fewer when
			// runs says so
			if !full && os.Getenv("SOAK_RUNS") == "" {
				jobs = append(jobs, job{k, 0, 9100, 0, killTargetBoth})
				continue
			}
			for i := range min(2*killRuns(k.kill), runs) {
				jobs = append(jobs, job{k, 0, int64(9100 + i), i / 2, killTargets[i%2]})
			}
			continue
		}
		for _, r := range rates {
			for i, seed := range seeds {
				jobs = append(jobs, job{k, r, seed, i, ""})
			}
		}
	}
	results := make([]soakRun, len(jobs))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			// a run that stops the test (a CLI command that never ends)
			// still counts, under its kind, as not converged
			name := killLabel(j.kind.name, j.target)
			results[i] = soakRun{kind: name, rate: j.rate, seed: j.seed, failure: "the run stopped early (see the log)"}
			t.Run(fmt.Sprintf("%s-%g-%d", name, j.rate, j.seed), func(t *testing.T) {
				results[i] = runSoak(t, j.kind, j.rate, j.seed, j.run, j.target)
				t.Logf("%s", results[i].line())
			})
		}()
	}
	wg.Wait()

	table := soakTable(results)
	t.Logf("fault campaign (%d runs per kind and rate):\n%s", runs, table)
	if out := os.Getenv("SOAK_TABLE"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, r := range results {
		// a kill point not reached means that run tested no kill there
		if r.orphans+r.dupVMIDs+r.dupVMs+r.dupAddrs+r.losses > 0 || len(r.notes) > 0 {
			t.Errorf("%s", r.line())
		}
	}
	for _, g := range soakGoals(results) {
		t.Errorf("goal not met: %s", g)
	}
}

// killTargets are what the kill runs kill, by the seed's parity.
var killTargets = []string{"provider", "cli"}

// killTargetBoth, the target of `make test`'s one kill run, kills the CLI
// in the even steps (create, upgrade) and the provider in the odd ones.
const killTargetBoth = "cli+provider"

// stepTarget is what a kill run with target kills in step i.
func stepTarget(target string, i int) string {
	if target == killTargetBoth {
		return killTargets[(i+1)%2]
	}
	return target
}

// killLabel names a kill run's kind by its target ("kill-cli"); other
// kinds keep their name.
func killLabel(kind, target string) string {
	if target == "" {
		return kind
	}
	return kind + "-" + target
}

// soakSeeds are the fault runs' seeds: 9100 onwards, one per run, or
// SOAK_SEEDS (comma-separated) to repeat chosen runs of a campaign.
func soakSeeds(t *testing.T, runs int) []int64 {
	t.Helper()
	var seeds []int64
	if v := os.Getenv("SOAK_SEEDS"); v != "" {
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				t.Fatalf("SOAK_SEEDS=%q: want seeds like 9103,9112", v)
			}
			seeds = append(seeds, n)
		}
		return seeds
	}
	for i := range runs {
		seeds = append(seeds, int64(9100+i))
	}
	return seeds
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// runSoak runs the steps with the faults on, each step at most twice; a
// step that does not converge then is retried once without faults (so the
// run can go on and clean up) and counts as not converged. A kill run first
// runs each step with the provider or the CLI (target) killed at the step's
// point, then does what Pulumi tells the user (`cancel` if the stack is
// locked, the same command again) at most twice.
func runSoak(t *testing.T, kind soakKind, rate float64, seed int64, nth int, target string) soakRun {
	start := time.Now()
	res := soakRun{kind: killLabel(kind.name, target), rate: rate, seed: seed}
	l := startTCLabWith(t, lab.Options{Seed: seed})
	env := harness.NewEnv(t)
	if target == "cli" || target == killTargetBoth {
		env.KillSafe()
	}
	prog := l.program(3, 2)
	p := harness.NewYAMLProject(t, env, "soak", prog.render(t))
	p.ConfigureLab(t, l.conn)
	var offs []pve.FaultStrike
	hosts := map[string]string{} // VM (and node) name → Proxmox node

	for i, step := range soakSteps {
		switch i {
		case 1:
			prog.Workers = 3
		case 2:
			prog.TalosVersion = "v1.12.6"
		}
		p.WriteProgram(t, "soak", prog.render(t))
		run, args := p.Up, []string{"up", "--yes", "--skip-preview"}
		if i == 3 {
			run, args = p.Destroy, []string{"destroy", "--yes"}
		}
		if kind.kill != nil {
			point := kind.kill[i][nth%len(kind.kill[i])]
			res.points = append(res.points, point)
			if stepTarget(target, i) == "cli" {
				res.notes = append(res.notes, killCLIAt(t, p, env, point, step, args, run)...)
			} else {
				killed := p.RunWith(t, map[string]string{killpoint.EnvVar: point}, args...)
				if !strings.Contains(killed.Output(), "killpoint: "+killpoint.EnvVar+"="+point) {
					res.notes = append(res.notes, fmt.Sprintf("%s: kill point %s not reached (exit %d)", step, point, killed.ExitCode))
				}
				if strings.Contains(killed.Output(), "pulumi cancel") {
					p.Run(t, "cancel", "--yes")
				}
			}
		}
		// A fresh draw of the kind's faults for each step: scripted rules
		// count calls from when they are set.
		l.SetFaults(kind.faults(rate, seed*10+int64(i)))
		ups := 0
		for attempt := 1; attempt <= 2; attempt++ {
			if r := run(t); r.ExitCode == 0 {
				ups = attempt
				break
			} else {
				t.Logf("%s, attempt %d, failed:\n%s\n%s", step, attempt, errorLines(r.Output()), tail(r.Output(), 40))
			}
		}
		offs = append(offs, powerOffs(l.PVE.FaultStrikes())...)
		l.SetFaults(pve.Faults{})
		res.ups = append(res.ups, ups)
		if ups == 0 {
			if r := run(t); r.ExitCode != 0 {
				res.failure = fmt.Sprintf("%s: still failing without faults: %s", step, tail(r.Output(), 5))
			}
		}
		res.count(t, l, p, i == 3)
		for _, vm := range l.VMs() {
			hosts[vm.Name] = vm.Node
		}
		if res.failure != "" {
			p.Destroy(t)
			break
		}
	}
	for _, q := range l.Talos().QuorumLosses() {
		t.Logf("%s", q)
		if fromPowerOff(q, offs, hosts) {
			res.offLosses++
		} else {
			res.losses++
		}
	}
	res.took = time.Since(start)
	return res
}

// killCLIAt runs a step's command with the CLI killed (SIGKILL) when the
// provider reaches point, waits for the provider it started to notice (a
// real user's next command would race it), and then does what Pulumi tells
// the user: the step's command again refuses (the stack is locked), `pulumi
// cancel --yes` unlocks it. It returns what went otherwise.
func killCLIAt(t *testing.T, p *harness.Project, env *harness.Env, point, step string, args []string, again func(testing.TB, ...string) harness.Result) []string {
	var notes []string
	killed := p.RunWith(t, map[string]string{killpoint.EnvVar: point, killpoint.TargetVar: "cli"}, args...)
	// -1: the CLI ended by a signal, which only the hook sends
	if killed.ExitCode != -1 {
		return append(notes, fmt.Sprintf("%s: kill point %s not reached, the CLI was not killed (exit %d)", step, point, killed.ExitCode))
	}
	start := time.Now()
	// a liveness bound, not a speed check (Pulumi's own health check ends
	// an orphaned provider after five minutes)
	for len(providerPIDs(t, env)) > 0 {
		if time.Since(start) > 2*time.Minute {
			notes = append(notes, fmt.Sprintf("%s: the provider still ran 2 min after the CLI was killed at %s", step, point))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s: CLI killed at %s; its provider exited after %s", step, point, time.Since(start).Round(100*time.Millisecond))
	if r := again(t); r.ExitCode == 0 || !strings.Contains(r.Output(), "pulumi cancel") {
		notes = append(notes, fmt.Sprintf("%s: after the CLI was killed at %s, %s did not refuse on a locked stack (exit %d): %s",
			step, point, args[0], r.ExitCode, tail(r.Output(), 5)))
	}
	if r := p.Run(t, "cancel", "--yes"); r.ExitCode != 0 {
		notes = append(notes, fmt.Sprintf("%s: cancel after the CLI was killed at %s: %s", step, point, tail(r.Output(), 5)))
	}
	return notes
}

// count adds the invariant violations of the lab against the stack now:
// VMs the state does not know (after destroy: any VM left), VMIDs the
// state holds twice, and names or addresses two VMs share.
func (r *soakRun) count(t *testing.T, l *tcLab, p *harness.Project, destroyed bool) {
	known := map[string]bool{}
	vmids := map[string]int{}
	for _, id := range stateIDs(t, p.StackExport(t), vmType) {
		known[id] = true
		_, vmid, _ := strings.Cut(id, "/")
		vmids[vmid]++
	}
	for _, n := range vmids {
		r.dupVMIDs += n - 1
	}
	names, addrs := map[string]int{}, map[string]int{}
	for _, vm := range l.VMs() {
		if vm.Template {
			continue
		}
		if destroyed || !known[fmt.Sprintf("%s/%d", vm.Node, vm.VMID)] {
			r.orphans++
		}
		names[vm.Name]++
		cfg, _, _ := l.VMConfig(vm.VMID)
		if ip := ipOf(cfg["ipconfig0"]); ip != "" {
			addrs[ip]++
		}
	}
	for _, n := range names {
		r.dupVMs += n - 1
	}
	for _, n := range addrs {
		r.dupAddrs += n - 1
	}
}

// ipOf is the address of a cloud-init ipconfig ("ip=10.0.0.5/24,gw=...").
func ipOf(ipconfig string) string {
	for _, kv := range strings.Split(ipconfig, ",") {
		if v, ok := strings.CutPrefix(kv, "ip="); ok {
			a, _, _ := strings.Cut(v, "/")
			return a
		}
	}
	return ""
}

// errorLines are the distinct error lines of a run's output, which its
// tail (the diagnostics) may not reach.
func errorLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.Contains(l, "error:") && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// powerOffs are the strikes of power-off rules.
func powerOffs(strikes []pve.FaultStrike) []pve.FaultStrike {
	return slices.DeleteFunc(strikes, func(s pve.FaultStrike) bool { return s.Rule.PowerOff == "" })
}

// fromPowerOff reports a quorum loss that began while, or shortly after (a
// member takes a while to boot and rejoin), the fault script powered off
// the Proxmox node of one of the members it counts as down.
func fromPowerOff(q talos.QuorumLoss, offs []pve.FaultStrike, hosts map[string]string) bool {
	for _, off := range offs {
		back := off.At.Add(off.Rule.For + 2*time.Minute)
		if q.At.Before(off.At.Add(-time.Second)) || q.At.After(back) {
			continue
		}
		for _, d := range q.Down {
			if hosts[d] == off.Rule.PowerOff {
				return true
			}
		}
	}
	return false
}

func (r soakRun) line() string {
	s := fmt.Sprintf("%s, seed %d: ups per step %v, %s; orphans %d, duplicate VMIDs %d, duplicate VMs %d, duplicate addresses %d, quorum losses %d (and %d with a host powered off)",
		soakLabel(r.kind, r.rate), r.seed, r.ups, r.took.Round(time.Second), r.orphans, r.dupVMIDs, r.dupVMs, r.dupAddrs, r.losses, r.offLosses)
	if len(r.points) > 0 {
		s += fmt.Sprintf("; killed at %v", r.points)
	}
	for _, n := range r.notes {
		s += "; " + n
	}
	if r.failure != "" {
		s += "; " + r.failure
	}
	return s
}

// soakTable sums the runs per kind and rate.
func soakTable(results []soakRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| faults | runs | converged in 1 up per step | within 2 | orphans | duplicate VMIDs | duplicate VMs | duplicate addresses | quorum losses | quorum losses with a host powered off | mean run |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	type key struct {
		kind string
		rate float64
	}
	var order []key
	rows := map[key][]soakRun{}
	for _, r := range results {
		k := key{r.kind, r.rate}
		if rows[k] == nil {
			order = append(order, k)
		}
		rows[k] = append(rows[k], r)
	}
	for _, k := range order {
		var one, two, orphans, vmids, vms, addrs, losses, offLosses int
		var took time.Duration
		for _, r := range rows[k] {
			if r.converged(1) {
				one++
			}
			if r.converged(2) {
				two++
			}
			orphans, vmids, vms, addrs, losses = orphans+r.orphans, vmids+r.dupVMIDs, vms+r.dupVMs, addrs+r.dupAddrs, losses+r.losses
			offLosses += r.offLosses
			took += r.took
		}
		n := len(rows[k])
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s |\n", soakLabel(k.kind, k.rate), n, one, two,
			orphans, vmids, vms, addrs, losses, offLosses, (took / time.Duration(n)).Round(time.Second))
	}
	return b.String()
}

// soakGoals lists the goals of issue 10 the runs miss: at 5 %, at least 19
// of 20 runs converge in one up per step and all within two; at 15 %, all
// within two. (Scaled to the number of runs.)
func soakGoals(results []soakRun) []string {
	var missed []string
	type key struct {
		kind string
		rate float64
	}
	one, two, n := map[key]int{}, map[key]int{}, map[key]int{}
	for _, r := range results {
		k := key{r.kind, r.rate}
		n[k]++
		if r.converged(1) {
			one[k]++
		}
		if r.converged(2) {
			two[k]++
		}
	}
	for k, total := range n {
		if two[k] < total {
			missed = append(missed, fmt.Sprintf("%s: %d of %d runs converged within two ups per step", soakLabel(k.kind, k.rate), two[k], total))
		}
		if k.rate > 0 && k.rate <= 0.05 && one[k]*20 < total*19 {
			missed = append(missed, fmt.Sprintf("%s: %d of %d runs converged in one up per step (goal 19 of 20)", soakLabel(k.kind, k.rate), one[k], total))
		}
	}
	slices.Sort(missed)
	return missed
}

// soakLabel names a kind and rate in the table ("500 at 5 %"); the kill
// runs have no rate.
func soakLabel(kind string, rate float64) string {
	if rate == 0 {
		return kind + " at every step"
	}
	return fmt.Sprintf("%s at %g %%", kind, rate*100)
}

// A quorum loss is put down to a power-off only when a down member ran on
// the node that lost power, from then until it could be back.
func TestSoakQuorumLossFromPowerOff(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	offs := []pve.FaultStrike{{Rule: pve.FaultRule{PowerOff: "pve2", For: 3 * time.Second}, What: "pve2", At: at}}
	hosts := map[string]string{"cp-1": "pve1", "cp-2": "pve2", "cp-3": "pve3"}
	loss := func(after time.Duration, down ...string) talos.QuorumLoss {
		return talos.QuorumLoss{Members: []string{"cp-1", "cp-2", "cp-3"}, Down: down, At: at.Add(after)}
	}
	for _, c := range []struct {
		q    talos.QuorumLoss
		want bool
	}{
		{loss(time.Second, "cp-1", "cp-2"), true},
		{loss(time.Minute, "cp-2", "cp-3"), true},
		{loss(time.Second, "cp-1", "cp-3"), false},   // neither ran on pve2
		{loss(-time.Minute, "cp-1", "cp-2"), false},  // before the power-off
		{loss(5*time.Minute, "cp-1", "cp-2"), false}, // long after it
	} {
		if got := fromPowerOff(c.q, offs, hosts); got != c.want {
			t.Errorf("%v at +%s: from the power-off %v, want %v", c.q.Down, c.q.At.Sub(at), got, c.want)
		}
	}
}
