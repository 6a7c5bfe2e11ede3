package talos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// A URL manifest a control plane cannot download is never rendered:
// Talos retries it without end (talosapi.ManifestFetchFailures). Waiting
// the whole manifestRenderWait for it on every control plane only delays
// the failure, so the wait ends early once the control plane's log shows
// the download failing again and again; a download that is only slow logs
// no failure and is waited for as before, and one that fails a few times
// and then succeeds renders before fetchFailingFor is up.
var (
	// fetchFailuresToGiveUp failed downloads since the wait began, the
	// first of them at least fetchFailingFor ago, end the wait.
	fetchFailuresToGiveUp = 3
	fetchFailingFor       = 30 * time.Second
	// fetchLookEvery spaces the reads of the control plane's log.
	fetchLookEvery = 5 * time.Second
)

// fetchWatch follows, during one wait for a control plane's render, the
// failed downloads of the URL manifests it still lacks.
type fetchWatch struct {
	node string
	read func(context.Context) ([]talosapi.FetchFailures, error)
	now  func() time.Time

	looked time.Time
	base   map[string]int       // priority+" "+digest -> failures before the wait
	first  map[string]time.Time // when a failure since the wait was first seen
}

func newFetchWatch(node string, read func(context.Context) ([]talosapi.FetchFailures, error), now func() time.Time) *fetchWatch {
	return &fetchWatch{node: node, read: read, now: now}
}

// check returns an error when one of missing (priority+" "+digest of the
// URLs the render lacks) keeps failing to download; nil while it may
// still come. A log that cannot be read is no verdict.
func (w *fetchWatch) check(ctx context.Context, missing []string) error {
	if len(missing) == 0 || (!w.looked.IsZero() && w.now().Sub(w.looked) < fetchLookEvery) {
		return nil
	}
	w.looked = w.now()
	failures, err := w.read(ctx)
	if err != nil {
		return nil
	}
	counts := map[string]talosapi.FetchFailures{}
	for _, f := range failures {
		counts[f.Priority+" "+f.Digest] = f
	}
	if w.base == nil {
		// The first look: what the log holds already may be from before
		// this update (a URL since fixed).
		w.base, w.first = map[string]int{}, map[string]time.Time{}
		for k, f := range counts {
			w.base[k] = f.Count
		}
		return nil
	}
	for _, k := range slices.Sorted(slices.Values(missing)) {
		f := counts[k]
		n := f.Count - w.base[k]
		if n <= 0 {
			continue
		}
		if _, ok := w.first[k]; !ok {
			w.first[k] = w.looked
		}
		if n >= fetchFailuresToGiveUp && w.looked.Sub(w.first[k]) >= fetchFailingFor {
			prio, digest, _ := strings.Cut(k, " ")
			return fmt.Errorf("control plane %s cannot download the %s %s (named by its digest: it may be a secret): "+
				"%d failed downloads in this update, the last: %s. Talos renders the manifest only once it downloads, "+
				"and retries without end: fix the URL or the server it names (the control plane downloads it itself, "+
				"with cluster.extraManifestHeaders), or remove it from the inputs; `talosctl -n %s dmesg` shows Talos's "+
				"\"error downloading\" lines", w.node, urlWhat(prio), digest, n, orUnknown(f.Last), w.node)
		}
	}
	return nil
}

// missingURLs are the URLs (priority+" "+digest) the lines in name that
// the rendered manifests ms lack.
func missingURLs(ms []talosapi.RenderedManifest, in []string) []string {
	have := map[string]bool{}
	for _, m := range ms {
		if prio, rest, ok := strings.Cut(m.ID, "-"); ok {
			have[prio+" "+talosconfig.InputDigest(rest)] = true
		}
	}
	var out []string
	for _, l := range in {
		if prio, d, ok := urlLine(l); ok && !have[prio+" "+d] {
			out = append(out, prio+" "+d)
		}
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "(no error text)"
	}
	return s
}
