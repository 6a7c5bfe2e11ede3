package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// row is one line of the report: a figure, its min and median over the runs, and the
// median load average while it was measured.
type row struct {
	what, min, median, load string
}

// minMedian of the values (median of an even count: the lower middle, a value that
// was measured).
func minMedian(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[0], s[(len(s)-1)/2]
}

func figure(what, format string, v []float64, loads []float64) row {
	lo, med := minMedian(v)
	_, l := minMedian(loads)
	return row{what: what, min: fmt.Sprintf(format, lo), median: fmt.Sprintf(format, med), load: fmt.Sprintf("%.1f", l)}
}

// count is a figure counted once.
func count(what string, n int) row {
	return row{what: what, min: fmt.Sprint(n), median: fmt.Sprint(n)}
}

func each[T any](xs []T, f func(T) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func seconds(d time.Duration) float64 { return d.Seconds() }

func loads(steps []step) []float64 { return each(steps, func(s step) float64 { return s.m.load }) }

// requestsPerVM excludes task status polls.
func requestsPerVM(s step) float64 {
	return float64(s.stats.Requests-s.stats.ByKind[kindTaskStatus]) / float64(max(s.vms, 1))
}

func pollsPerTask(s step) float64 {
	return float64(s.stats.ByKind[kindTaskStatus]) / float64(max(len(s.stats.Tasks), 1))
}

// noticedAfter is the longest a finished task went unnoticed.
func noticedAfter(s step) float64 {
	worst := 0.0
	for _, t := range s.stats.Tasks {
		worst = max(worst, t.NoticedAfter)
	}
	return worst
}

const kindTaskStatus = "GET /nodes/{node}/tasks/{upid}/status"

func (r *results) rows() []row {
	var rows []row
	for _, c := range r.creates {
		ups := c.ups
		crit := c.critical.Ready.Seconds()
		rows = append(rows,
			figure(fmt.Sprintf("create %s: pulumi up (s)", c.shape), "%.1f", each(ups, func(s step) float64 { return seconds(s.m.wall) }), loads(ups)),
			row{what: fmt.Sprintf("create %s: lab critical path (s)", c.shape), min: fmt.Sprintf("%.1f", crit), median: fmt.Sprintf("%.1f", crit)},
			figure(fmt.Sprintf("create %s: up / critical path", c.shape), "%.2f", each(ups, func(s step) float64 { return s.m.wall.Seconds() / crit }), loads(ups)),
			figure(fmt.Sprintf("create %s: Proxmox requests per VM, task polls excluded", c.shape), "%.1f", each(ups, requestsPerVM), loads(ups)),
			figure(fmt.Sprintf("create %s: status polls per task", c.shape), "%.1f", each(ups, pollsPerTask), loads(ups)),
			figure(fmt.Sprintf("create %s: longest a finished task went unnoticed (s)", c.shape), "%.2f", each(ups, noticedAfter), loads(ups)),
			figure(fmt.Sprintf("create %s: provider CPU (s)", c.shape), "%.1f", each(ups, func(s step) float64 { return seconds(s.m.cpu) }), loads(ups)),
			figure(fmt.Sprintf("destroy %s: pulumi destroy (s)", c.shape), "%.1f", each(c.destroys, func(s step) float64 { return seconds(s.m.wall) }), loads(c.destroys)),
		)
	}
	var noopWall, noopCPU []float64
	for _, p := range r.previews {
		n := p.shape.nodes()
		rows = append(rows,
			figure(fmt.Sprintf("preview %d nodes, new cluster: wall (s)", n), "%.2f", each(p.fresh, func(s step) float64 { return seconds(s.m.wall) }), loads(p.fresh)),
			figure(fmt.Sprintf("preview %d nodes, new cluster: provider CPU (s)", n), "%.2f", each(p.fresh, func(s step) float64 { return seconds(s.m.cpu) }), loads(p.fresh)),
			figure(fmt.Sprintf("preview %d nodes, no changes: wall (s)", n), "%.2f", each(p.noop, func(s step) float64 { return seconds(s.m.wall) }), loads(p.noop)),
			figure(fmt.Sprintf("preview %d nodes, no changes: provider CPU (s)", n), "%.2f", each(p.noop, func(s step) float64 { return seconds(s.m.cpu) }), loads(p.noop)),
			figure(fmt.Sprintf("preview %d nodes, no changes: Proxmox requests per VM", n), "%.1f", each(p.noop, func(s step) float64 { return float64(s.stats.Requests) / float64(n) }), loads(p.noop)),
			count(fmt.Sprintf("preview %d nodes, no changes: state writes by the CLI", n), p.writes),
			figure(fmt.Sprintf("preview %d nodes, first no-op after the create: wall (s)", n), "%.2f", []float64{seconds(p.afterCreate.m.wall)}, loads([]step{p.afterCreate})),
			figure(fmt.Sprintf("preview %d nodes, first no-op after the create: provider CPU (s)", n), "%.2f", []float64{seconds(p.afterCreate.m.cpu)}, loads([]step{p.afterCreate})),
			count(fmt.Sprintf("preview %d nodes, first no-op after the create: state writes by the CLI", n), p.writesAfterCreate),
		)
		_, w := minMedian(each(p.noop, func(s step) float64 { return seconds(s.m.wall) }))
		_, c := minMedian(each(p.noop, func(s step) float64 { return seconds(s.m.cpu) }))
		noopWall, noopCPU = append(noopWall, w), append(noopCPU, c)
	}
	if len(r.previews) >= 2 {
		first, last := r.previews[0].shape.nodes(), r.previews[len(r.previews)-1].shape.nodes()
		ratio := func(v []float64) string { return fmt.Sprintf("%.2f", v[len(v)-1]/max(v[0], 1e-9)) }
		rows = append(rows,
			row{what: fmt.Sprintf("preview no changes, %d vs %d nodes: wall (medians)", last, first), median: ratio(noopWall)},
			row{what: fmt.Sprintf("preview no changes, %d vs %d nodes: provider CPU (medians)", last, first), median: ratio(noopCPU)})
	}
	rows = append(rows,
		figure("provider cold start to GetSchema (s)", "%.3f", each(r.cold, func(m measured) float64 { return seconds(m.wall) }), each(r.cold, func(m measured) float64 { return m.load })),
		figure("provider cold start CPU (s)", "%.3f", each(r.cold, func(m measured) float64 { return seconds(m.cpu) }), each(r.cold, func(m measured) float64 { return m.load })),
	)
	if r.peaks != nil {
		rows = append(rows, r.peaks.rows()...)
	}
	if l := r.large; l != nil {
		one := func(what, format string, v float64, s step) row {
			return row{what: what, min: fmt.Sprintf(format, v), median: fmt.Sprintf(format, v), load: fmt.Sprintf("%.1f", s.m.load)}
		}
		rows = append(rows,
			one(fmt.Sprintf("large %s: create (s)", l.shape), "%.1f", seconds(l.create.m.wall), l.create),
			one(fmt.Sprintf("large %s: Proxmox requests per VM, task polls excluded", l.shape), "%.1f", requestsPerVM(l.create), l.create),
			one(fmt.Sprintf("large %s: status polls per task", l.shape), "%.1f", pollsPerTask(l.create), l.create),
			one(fmt.Sprintf("large %s: preview, no changes (s)", l.shape), "%.1f", seconds(l.noop.m.wall), l.noop),
			one(fmt.Sprintf("large %s: preview, no changes, provider CPU (s)", l.shape), "%.2f", seconds(l.noop.m.cpu), l.noop),
			one(fmt.Sprintf("large %s: preview, no changes, Proxmox requests per VM", l.shape), "%.1f", float64(l.noop.stats.Requests)/float64(l.shape.nodes()), l.noop),
			one(fmt.Sprintf("large: scale to %s (s)", l.scaled), "%.1f", seconds(l.scale.m.wall), l.scale),
			one(fmt.Sprintf("large: scale to %s, Proxmox requests per new VM, task polls excluded", l.scaled), "%.1f", requestsPerVM(l.scale), l.scale),
			one(fmt.Sprintf("large: destroy %s (s)", l.scaled), "%.1f", seconds(l.destr.m.wall), l.destr),
		)
	}
	return rows
}

// kinds is the requests per VM by kind of the last run of each create and of each
// preview without changes.
func (r *results) kinds() []string {
	var out []string
	line := func(what string, s step) {
		var parts []string
		for _, k := range pve.SortedKinds(s.stats.ByKind) {
			parts = append(parts, fmt.Sprintf("%.1f %s", float64(s.stats.ByKind[k])/float64(s.vms), k))
		}
		out = append(out, fmt.Sprintf("%s, requests per VM by kind (%d VMs, %d tasks): %s", what, s.vms, len(s.stats.Tasks), strings.Join(parts, "; ")))
	}
	for _, c := range r.creates {
		if len(c.ups) > 0 {
			line("create "+c.shape.String(), c.ups[len(c.ups)-1])
		}
	}
	for _, p := range r.previews {
		if len(p.noop) > 0 {
			line(fmt.Sprintf("preview %d nodes, no changes", p.shape.nodes()), p.noop[len(p.noop)-1])
		}
	}
	return out
}

func (r *results) header() []string {
	var crit []string
	for _, c := range r.creates {
		crit = append(crit, fmt.Sprintf("%s: %.1f s (%s)", c.shape, c.critical.Ready.Seconds(), strings.Join(c.critical.Steps, " → ")))
	}
	h := []string{
		fmt.Sprintf("proxmoxtalos benchmarks, %s, commit %s, %d CPUs, creates at lab time scale %g, %d runs each (min and median)",
			r.started.Format("2006-01-02 15:04 MST"), r.commit, r.cpus, r.timeScale, r.runs),
	}
	if len(crit) > 0 {
		h = append(h, "lab critical paths (from the lab's own durations): "+strings.Join(crit, "; "))
	}
	if len(r.previews) > 0 {
		h = append(h, "previews with no changes run after one no-op up that settles the state the create wrote "+
			"(a new cluster's shape); \"first no-op after the create\" is one run before it. State writes by the CLI: "+
			"how many times a no-op preview serialized the whole state (pulumi backend/snapshot.go "+
			"sameSnapshotMutation.mustWrite, counted in one more preview at -v=9, untimed)")
	}
	return h
}

// text is the table for the terminal.
func (r *results) text() string {
	var b strings.Builder
	for _, h := range r.header() {
		b.WriteString(h + "\n")
	}
	rows := r.rows()
	width := 0
	for _, rw := range rows {
		width = max(width, len(rw.what))
	}
	fmt.Fprintf(&b, "\n%-*s  %9s  %9s  %8s\n", width, "figure", "min", "median", "load 1m")
	for _, rw := range rows {
		fmt.Fprintf(&b, "%-*s  %9s  %9s  %8s\n", width, rw.what, rw.min, rw.median, rw.load)
	}
	for _, k := range r.kinds() {
		b.WriteString("\n" + k + "\n")
	}
	return b.String()
}

// reportIntro opens docs/benchmarks.md; each run adds a section below it, newest first.
const reportIntro = "# Benchmarks\n\n" +
	"Written by `make bench` (tests/bench): the provider against the lab (tests/lab) with the real Pulumi CLI. " +
	"Request counts come from the lab itself (`GET /lab/stats`); the critical path is computed from the lab's own " +
	"durations. The machine is shared: compare load-independent figures (request counts, CPU time, critical-path " +
	"ratios at time scale 1, where the lab's waits dominate) rather than wall times. Each run adds a section " +
	"here, newest first; `make bench BENCH_FLAGS='-note ...'` says what it measured.\n"

// markdown is this run's section of docs/benchmarks.md.
func (r *results) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s, commit %s\n\n", r.started.UTC().Format("2006-01-02 15:04 UTC"), r.commit)
	if r.note != "" {
		b.WriteString(r.note + "\n\n")
	}
	for _, h := range r.header() {
		b.WriteString(h + "\n\n")
	}
	b.WriteString("| figure | min | median | load (1 min) |\n| --- | ---: | ---: | ---: |\n")
	for _, rw := range r.rows() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", rw.what, rw.min, rw.median, rw.load)
	}
	for _, k := range r.kinds() {
		b.WriteString("\n" + k + "\n")
	}
	return b.String()
}

// withReport is the report file's text with this run's section added above the earlier
// runs' (old is the file's text, "" when there is none).
func (r *results) withReport(old string) string {
	earlier := ""
	if i := strings.Index(old, "\n## "); i >= 0 {
		earlier = "\n" + old[i+1:]
	}
	return reportIntro + "\n" + r.markdown() + earlier
}
