package main

import (
	"fmt"
	"slices"
	"sync"
)

// The largest provider process of each kind of command, over every command of the run
// (measured or not: the previews' `up` and `destroy` count too), so that a rise in memory
// can be traced to the command that had it.
const (
	kindCreate  = "create (up)"
	kindPreview = "preview"
	kindNoop    = "no-op preview"
	kindUpdate  = "update (up)"
	kindDestroy = "destroy"
	kindCold    = "cold start"
)

// peakOrder is the report's order of the kinds.
var peakOrder = []string{kindCreate, kindPreview, kindNoop, kindUpdate, kindDestroy, kindCold}

// rssPeaks is the peak resident set of a provider process per command kind, in MiB.
type rssPeaks struct {
	mu sync.Mutex
	by map[string]float64
}

func (p *rssPeaks) add(kind string, mib float64) {
	if kind == "" || mib <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = map[string]float64{}
	}
	p.by[kind] = max(p.by[kind], mib)
}

func (p *rssPeaks) get(kind string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.by[kind]
}

// commandKind is the kind of a CLI command of a stack that has had ups successful `up`s
// before it ("" for one that starts no provider).
func commandKind(args []string, ups int) string {
	switch args[0] {
	case "up":
		if ups == 0 {
			return kindCreate
		}
		return kindUpdate
	case "preview":
		if slices.Contains(args, "--expect-no-changes") {
			return kindNoop
		}
		return kindPreview
	case "destroy":
		return kindDestroy
	}
	return ""
}

// rows are the report's lines, one per kind seen.
func (p *rssPeaks) rows() []row {
	var out []row
	for _, k := range peakOrder {
		if v := p.get(k); v > 0 {
			out = append(out, row{what: fmt.Sprintf("provider peak RSS, %s (MiB)", k), median: fmt.Sprintf("%.0f", v)})
		}
	}
	return out
}
