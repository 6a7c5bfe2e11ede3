// Command bench is what `make bench` runs: it measures the provider against the lab with
// the real Pulumi CLI and prints a table (and writes it to docs/benchmarks.md):
//
//   - a fresh TalosCluster create per cluster shape, against the lab's critical path for
//     it, computed from the lab's own durations (lab.FreshClusterCriticalPath);
//   - the Proxmox requests per VM by kind, and the status polls per task, as the lab
//     counted them (pve.Stats);
//   - preview wall time and provider CPU, fresh and without changes, per cluster size;
//   - the provider's cold start (process start to a GetSchema answer) and peak memory;
//   - optionally a large cluster: create, no-op preview, scale out, destroy.
//
// Every figure is a min and a median over several runs, with the machine's load average
// beside it: on a shared machine, request counts, CPU times and critical-path ratios at
// time scale 1 (where the lab's waits dominate) mean more than wall times.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// config is what the flags set.
type config struct {
	runs      int
	clusters  string  // cluster shapes to create, "3+2,5+10"
	previews  string  // cluster sizes to preview, "6,60"
	large     string  // a large shape to create, preview, scale and destroy, "3+97"; "" skips
	scaleTo   int     // workers of the large shape after scaling out
	timeScale float64 // of the labs the creates run in
	out       string  // markdown report, "" for none
	work      string
	root      string // the repository (default: the working folder)
	note      string // what this run measures, in the report
	// hold keeps each preview stack and its lab after the no-op previews, until
	// the benchmark is interrupted (to preview it again by hand: holdStack).
	hold bool
}

func main() {
	if filepath.Base(os.Args[0]) == providerBinary {
		os.Exit(wrapProvider())
	}
	var c config
	flag.IntVar(&c.runs, "runs", 3, "runs of each measurement (min and median are reported)")
	flag.StringVar(&c.clusters, "clusters", "3+2,5+10", "cluster shapes (control planes+workers) to create at -time-scale")
	flag.StringVar(&c.previews, "previews", "6,60", "cluster sizes (3 control planes, the rest workers) to preview, fresh and without changes")
	flag.StringVar(&c.large, "large", "3+97", "a large shape over 5 Proxmox nodes to create, preview, scale out and destroy once (empty: skip)")
	flag.IntVar(&c.scaleTo, "large-scale-to", 117, "workers of the large shape after its scale-out")
	flag.Float64Var(&c.timeScale, "time-scale", 1, "the lab's time scale for creates (1: realistic durations)")
	flag.StringVar(&c.out, "out", "docs/benchmarks.md", "markdown report to write (empty: none)")
	flag.StringVar(&c.note, "note", "", "a line for the report saying what this run measures (\"before X\", \"after X\")")
	flag.StringVar(&c.work, "work", ".cache/bench", "work folder (stacks, logs)")
	flag.BoolVar(&c.hold, "hold", false, "keep each preview stack and its lab after its no-op previews until interrupted "+
		"(env.sh in the stack's folder sets up a shell to run pulumi there, with another provider binary if wanted)")
	flag.Parse()
	rep, err := run(c)
	if rep != nil {
		fmt.Print(rep.text())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nbench failed: %v\n", err)
		os.Exit(1)
	}
}

// parseShapes reads "3+2,5+10".
func parseShapes(s string) ([]clusterShape, error) {
	var out []clusterShape
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		a, b, ok := strings.Cut(f, "+")
		cps, err1 := strconv.Atoi(a)
		workers, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || cps < 1 || workers < 0 {
			return nil, fmt.Errorf("cluster shape %q: write control planes+workers, like 3+2", f)
		}
		out = append(out, clusterShape{controlPlanes: cps, workers: workers})
	}
	return out, nil
}

// parseSizes reads "6,60" as shapes of 3 control planes (1 below 4 nodes) and workers.
func parseSizes(s string) ([]clusterShape, error) {
	var out []clusterShape
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 2 {
			return nil, fmt.Errorf("preview size %q: write a node count of 2 or more", f)
		}
		cps := 3
		if n < 4 {
			cps = 1
		}
		out = append(out, clusterShape{controlPlanes: cps, workers: n - cps})
	}
	return out, nil
}
