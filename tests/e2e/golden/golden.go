// Package golden compares CLI output with reviewed golden files: only what
// truly varies between runs is normalised (the lab's address block and
// ports, durations, HMAC fingerprints keyed by random cluster secrets,
// random MAC addresses and UUIDs); everything a reviewer reads stays.
// `cd tests/e2e && go test . -run Golden -update` rewrites the files.
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
	// Digests of configurations and VM settings: they fingerprint values
	// that hold random secrets or MACs. (Stable IDs such as a schematic ID
	// are protected by a Literal replacement.)
	{regexp.MustCompile(`\b[0-9a-f]{16,64}\b`), "<digest>"},
	{regexp.MustCompile(`\(config [0-9a-f]{8}\)`), "(config <digest>)"},
	// VMIDs in provider messages (allocated in whatever order VMs are created).
	{regexp.MustCompile(`\bVM \d+ on node\b`), "VM <vmid> on node"},
	// and the waits' vmIds maps (node address → VMID) in previews.
	{regexp.MustCompile(`(?m)^(\s+"?\d+\.\d+\.\d+\.\d+"?): \d+,?$`), "$1: <vmid>"},
	// Loopback ports of lab servers not given as literals.
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
	// Trailing spaces, and the padding that aligns map keys (its width
	// depends on the longest key, which may hold a normalised value).
	{regexp.MustCompile(`(?m)[ \t]+$`), ""},
	{regexp.MustCompile(`(\S) +:(\s)`), "$1:$2"},
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

// stepHeader starts a resource's block in `pulumi preview` output: four
// spaces, the operation and type, the operation in parentheses.
var stepHeader = regexp.MustCompile(`^ {4}[^ \[].*: \([a-z-]+\)$`)

var urnLine = regexp.MustCompile(`^ +\[urn=(.*)\]$`)

// heartbeat is the line the CLI's non-interactive display prints when no
// step has finished for a while ("@ previewing update...."): it says how
// slow the machine was, not what the preview shows, and it may fall between
// two steps' blocks.
var heartbeat = regexp.MustCompile(`(?m)^@ [a-z]+ [a-z]+\.*\n`)

// SortSteps orders the resource blocks of a preview by resource name and
// type (each node's resources together): the engine
// reports steps of independent resources in the order it reaches them,
// which varies between runs. Lines outside the blocks keep their place;
// progress heartbeats are dropped.
func SortSteps(text string) string {
	lines := strings.Split(heartbeat.ReplaceAllString(text, ""), "\n")

	type block struct {
		urn   string
		lines []string
	}

	var out []string

	for i := 0; i < len(lines); {
		if !stepHeader.MatchString(lines[i]) {
			out = append(out, lines[i])
			i++

			continue
		}

		// A run of consecutive blocks.
		var blocks []block

		for i < len(lines) && stepHeader.MatchString(lines[i]) {
			b := block{lines: []string{lines[i]}}
			i++

			for i < len(lines) && strings.HasPrefix(lines[i], "     ") && !stepHeader.MatchString(lines[i]) {
				if m := urnLine.FindStringSubmatch(lines[i]); m != nil && b.urn == "" {
					// By resource name, then type: each node's
					// resources together.
					j := max(strings.LastIndex(m[1], "::"), 0)
					b.urn = strings.TrimPrefix(m[1][j:], "::") + " " + m[1][:j]
				}

				b.lines = append(b.lines, lines[i])
				i++
			}

			blocks = append(blocks, b)
		}

		sort.SliceStable(blocks, func(a, b int) bool { return blocks[a].urn < blocks[b].urn })

		for _, b := range blocks {
			out = append(out, b.lines...)
		}
	}

	return strings.Join(out, "\n")
}
