// Package golden compares CLI output with reviewed golden files: only what
// truly varies between runs is normalised (the lab's address block and
// ports, durations, HMAC fingerprints keyed by random cluster secrets,
// random MAC addresses and UUIDs); everything a reviewer reads stays.
// `go test ./tests/e2e/ -run Golden -update` rewrites the files.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with the output of this run")

// Normalizer replaces run-specific values with stable placeholders.
type Normalizer struct {
	// Literal replacements applied first, longest first (the lab's address
	// block "127.12.34." -> "10.0.0.", its endpoint, the factory URL).
	Literal map[string]string
}

var patterns = []struct {
	re   *regexp.Regexp
	with string
}{
	// Durations in the summary and per-step timings.
	{regexp.MustCompile(`(?m)^Duration: .*$`), "Duration: <duration>"},
	{regexp.MustCompile(`\[\d+(\.\d+)?(ms|s|m)\]`), "[<duration>]"},
	{regexp.MustCompile(`\(\d+(\.\d+)?(ms|s|m)( so far)?\)`), "(<duration>)"},
	// Secret fingerprints: keyed by the cluster's random secret.
	{regexp.MustCompile(`hmac:[0-9a-f]{12}`), "hmac:<fingerprint>"},
	// Random MACs (BC:24:11 is the lab's prefix) and UUIDs.
	{regexp.MustCompile(`(?i)\b(?:[0-9a-f]{2}:){5}[0-9a-f]{2}\b`), "<mac>"},
	{regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<uuid>"},
	// Loopback ports of lab servers not given as literals.
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
	// Trailing spaces the CLI pads lines with.
	{regexp.MustCompile(`(?m)[ \t]+$`), ""},
}

// Normalize returns text with run-specific values replaced.
func (n Normalizer) Normalize(text string) string {
	keys := make([]string, 0, len(n.Literal))
	for k := range n.Literal {
		keys = append(keys, k)
	}

	// Longest first, so that a URL is replaced before its host.
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}

		return keys[i] < keys[j]
	})

	for _, k := range keys {
		text = strings.ReplaceAll(text, k, n.Literal[k])
	}

	for _, p := range patterns {
		text = p.re.ReplaceAllString(text, p.with)
	}

	return text
}

// Check compares got with the golden file, or rewrites it with -update. A
// mismatch fails the test with both texts and the first differing line.
func Check(t testing.TB, path, got string) {
	t.Helper()

	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}

		return
	}

	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run with -update to create it, then review it)", path, err)
	}

	if string(want) == got {
		return
	}

	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	line := 0

	for line < len(wl) && line < len(gl) && wl[line] == gl[line] {
		line++
	}

	t.Errorf("output differs from %s at line %d (run with -update to accept it, then review the diff):\n--- want\n%s\n--- got\n%s",
		path, line+1, want, got)
}
