package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// bench holds where things are.
type bench struct {
	cfg      config
	root     string
	work     string
	tools    string // .tools/bin: the Pulumi CLI and the YAML language host
	provider string // the real provider binary
	wrapper  string // this program, installed in each stack as the provider (wrap.go)
	version  string // the plugin version it is installed as (VERSION)
	progress func(format string, args ...any)
	peaks    rssPeaks // every command's provider memory, by kind
}

// labRun is one lab, started in this process, and its log.
type labRun struct {
	lab *lab.Lab
	log *os.File
}

// startLab starts a lab whose log (each line after its wall time, to lay the
// lab's steps beside the CLI's output) goes to <work>/<name>.lab.log.
func (b *bench) startLab(timeScale float64, hosts []string, name string) (*labRun, error) {
	var nodes []pve.NodeSpec
	for _, h := range hosts {
		n := pve.DefaultNode(h)
		n.MemoryMiB, n.Cores = 256<<10, 64 // room for 120 nodes of 2 GiB over 5 hosts
		nodes = append(nodes, n)
	}
	if err := os.MkdirAll(b.work, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(b.work, name+".lab.log"))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(f, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05.000")}, args...)...)
	}
	l, err := lab.Start(context.Background(), lab.Options{Nodes: nodes, TimeScale: timeScale, Logf: logf})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the lab: %w", err)
	}
	return &labRun{lab: l, log: f}, nil
}

// close stops the lab, then closes its log.
func (l *labRun) close() {
	l.lab.Close()
	l.log.Close()
}

func hostsFor(nodes int) []string {
	if nodes > 5 {
		return []string{"pve1", "pve2", "pve3", "pve4", "pve5"}
	}
	return []string{"pve1", "pve2", "pve3"}
}

// step is one measured command with what the lab served during it.
type step struct {
	m     measured
	stats pve.Stats
	vms   int
}

// measure resets the lab's counts, runs the command and reads them.
func (l *labRun) measure(s *stack, vms int, args ...string) (step, error) {
	l.lab.PVE.ResetStats()
	m, err := s.run(args...)
	return step{m: m, stats: l.lab.PVE.Stats(), vms: vms}, err
}

// results are every measurement of a benchmark run.
type results struct {
	started   time.Time
	commit    string
	cpus      int
	timeScale float64
	runs      int
	note      string
	creates   []createResult
	previews  []previewResult
	cold      []measured
	large     *largeResult
	peaks     *rssPeaks
}

type createResult struct {
	shape    clusterShape
	critical lab.CriticalPath
	ups      []step
	destroys []step
}

type previewResult struct {
	shape       clusterShape
	fresh, noop []step
	// afterCreate is the first no-op preview, right after the create; settle the no-op up
	// after it, before the no-op previews in noop.
	afterCreate, settle step
	// writesAfterCreate and writes are the state writes the CLI decided in a no-op preview
	// right after the create and in one after the settling up (stateWrites).
	writesAfterCreate, writes int
}

type largeResult struct {
	shape, scaled              clusterShape
	create, noop, scale, destr step
}

func run(c config) (*results, error) {
	b, err := setup(c)
	if err != nil {
		return nil, err
	}
	clusters, err := parseShapes(c.clusters)
	if err != nil {
		return nil, err
	}
	sizes, err := parseSizes(c.previews)
	if err != nil {
		return nil, err
	}
	var large []clusterShape
	if c.large != "" {
		if large, err = parseShapes(c.large); err != nil || len(large) != 1 {
			return nil, fmt.Errorf("-large %q: one shape like 3+97", c.large)
		}
	}
	r := &results{started: time.Now(), commit: gitCommit(b.root, c.out), cpus: runtime.NumCPU(), timeScale: c.timeScale, runs: c.runs, note: c.note, peaks: &b.peaks}

	for range c.runs {
		m, err := coldStart(b.provider)
		if err != nil {
			return r, err
		}
		r.cold = append(r.cold, m)
		b.peaks.add(kindCold, m.rssMiB)
	}
	for _, shape := range clusters {
		shape.hosts = hostsFor(shape.nodes())
		// the stack sets no talosVersion: its nodes run the provider's default
		cr := createResult{shape: shape, critical: lab.FreshClusterCriticalPath(shape.controlPlanes, talosconfig.DefaultTalosVersion)}
		for i := range c.runs {
			b.progress("create %s, run %d of %d (time scale %g)", shape, i+1, c.runs, c.timeScale)
			up, destroy, err := b.createOnce(shape, fmt.Sprintf("create-%s-%d", shape, i+1))
			if err != nil {
				return r, err
			}
			cr.ups, cr.destroys = append(cr.ups, up), append(cr.destroys, destroy)
		}
		r.creates = append(r.creates, cr)
	}
	for _, shape := range sizes {
		shape.hosts = hostsFor(shape.nodes())
		b.progress("previews of %d nodes, %d runs each", shape.nodes(), c.runs)
		pr, err := b.previews(shape)
		if err != nil {
			return r, err
		}
		r.previews = append(r.previews, pr)
	}
	if len(large) == 1 {
		shape := large[0]
		shape.hosts = hostsFor(6)
		b.progress("large cluster %s: create, preview, scale to %d workers, destroy (time scale %g)", shape, c.scaleTo, c.timeScale)
		if r.large, err = b.largeCluster(shape); err != nil {
			return r, err
		}
	}
	if c.out != "" {
		out := c.out
		if !filepath.IsAbs(out) {
			out = filepath.Join(b.root, out)
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return r, err
		}
		old, err := os.ReadFile(out)
		if err != nil && !os.IsNotExist(err) {
			return r, err
		}
		if err := os.WriteFile(out, []byte(r.withReport(string(old))), 0o644); err != nil {
			return r, err
		}
		b.progress("wrote %s", c.out)
	}
	return r, nil
}

// setup finds the tools and the provider and lays out the plugin folder.
func setup(c config) (*bench, error) {
	root := c.root
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		root = wd
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return nil, fmt.Errorf("run the benchmark from the repository root (make bench)")
	}
	b := &bench{cfg: c, root: root, work: filepath.Join(root, c.work), tools: filepath.Join(root, ".tools", "bin"),
		provider: os.Getenv("PROXMOXTALOS_PROVIDER_BIN"),
		progress: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "==> %s (load %.1f)\n", fmt.Sprintf(format, args...), loadAverage())
		}}
	if b.provider == "" {
		b.provider = filepath.Join(root, "bin", providerBinary)
	}
	// the plugin wrapper runs the provider from the stack's folder: a
	// relative path must not be taken from there
	if abs, err := filepath.Abs(b.provider); err == nil {
		b.provider = abs
	}
	if !filepath.IsAbs(c.work) {
		b.work = filepath.Join(root, c.work)
	} else {
		b.work = c.work
	}
	for _, f := range []string{filepath.Join(b.tools, "pulumi"), filepath.Join(b.tools, "pulumi-language-yaml"), b.provider} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("%s is missing: run make tools provider first", f)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b.wrapper = self
	version, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return nil, err
	}
	b.version = strings.TrimSpace(string(version))
	return b, nil
}

// createOnce creates the shape in a fresh lab, then destroys it.
func (b *bench) createOnce(shape clusterShape, name string) (up, destroy step, err error) {
	l, err := b.startLab(b.cfg.timeScale, shape.hosts, name)
	if err != nil {
		return up, destroy, err
	}
	defer l.close()
	s, err := newStack(b, name, shape, l)
	if err != nil {
		return up, destroy, err
	}
	if up, err = l.measure(s, shape.nodes(), "up", "--yes", "--skip-preview"); err != nil {
		return up, destroy, err
	}
	// each run's own figures: the report keeps min and median, and a
	// goal such as "<= 10 requests per VM" holds for every run or not
	b.progress("%s: up %.1f s, %.1f Proxmox requests per VM besides task polls, %.1f polls per task",
		name, up.m.wall.Seconds(), requestsPerVM(up), pollsPerTask(up))
	destroy, err = l.measure(s, shape.nodes(), "destroy", "--yes", "--skip-preview")
	return up, destroy, err
}

// previews measures previews of a new cluster of the shape, creates it (time scale 0: only
// the previews are measured) and measures previews without changes.
func (b *bench) previews(shape clusterShape) (previewResult, error) {
	pr := previewResult{shape: shape}
	name := fmt.Sprintf("preview-%d", shape.nodes())
	l, err := b.startLab(0, shape.hosts, name)
	if err != nil {
		return pr, err
	}
	defer l.close()
	s, err := newStack(b, name, shape, l)
	if err != nil {
		return pr, err
	}
	for range b.cfg.runs {
		st, err := l.measure(s, shape.nodes(), "preview")
		if err != nil {
			return pr, err
		}
		pr.fresh = append(pr.fresh, st)
	}
	if _, err := s.run("up", "--yes", "--skip-preview"); err != nil {
		return pr, err
	}
	// The create's state has the shape of a new cluster (its nodes configured together,
	// no rollout dependencies), which the first no-op preview compares with the day-two
	// shape and the next up stores: one timed run of that preview, then the settled ones.
	if pr.afterCreate, err = l.measure(s, shape.nodes(), "preview", "--expect-no-changes"); err != nil {
		return pr, err
	}
	if pr.writesAfterCreate, err = s.stateWrites(); err != nil {
		return pr, err
	}
	if pr.settle, err = l.measure(s, shape.nodes(), "up", "--yes", "--skip-preview", "--expect-no-changes"); err != nil {
		return pr, err
	}
	if pr.writes, err = s.stateWrites(); err != nil {
		return pr, err
	}
	for range b.cfg.runs {
		st, err := l.measure(s, shape.nodes(), "preview", "--expect-no-changes")
		if err != nil {
			return pr, err
		}
		pr.noop = append(pr.noop, st)
	}
	if b.cfg.hold {
		if err := b.holdStack(s); err != nil {
			return pr, err
		}
	}
	_, err = s.run("destroy", "--yes", "--skip-preview")
	return pr, err
}

// largeCluster creates the shape, previews it without changes, scales it out and destroys it.
func (b *bench) largeCluster(shape clusterShape) (*largeResult, error) {
	lr := &largeResult{shape: shape, scaled: clusterShape{controlPlanes: shape.controlPlanes, workers: b.cfg.scaleTo, hosts: shape.hosts}}
	name := "large-" + shape.String()
	l, err := b.startLab(b.cfg.timeScale, shape.hosts, name)
	if err != nil {
		return nil, err
	}
	defer l.close()
	s, err := newStack(b, name, shape, l)
	if err != nil {
		return nil, err
	}
	if lr.create, err = l.measure(s, shape.nodes(), "up", "--yes", "--skip-preview"); err != nil {
		return lr, err
	}
	if lr.noop, err = l.measure(s, shape.nodes(), "preview", "--expect-no-changes"); err != nil {
		return lr, err
	}
	if err := s.write(b, lr.scaled, l); err != nil {
		return lr, err
	}
	if lr.scale, err = l.measure(s, lr.scaled.workers-shape.workers, "up", "--yes", "--skip-preview"); err != nil {
		return lr, err
	}
	lr.destr, err = l.measure(s, lr.scaled.nodes(), "destroy", "--yes", "--skip-preview")
	return lr, err
}

// gitCommit names the checkout: the short commit, "+changes" when the tree (but the
// report) differs from it.
func gitCommit(root, report string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!"+report).Output(); err == nil && len(st) > 0 {
		commit += "+changes"
	}
	return commit
}
