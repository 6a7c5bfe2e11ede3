package main

import (
	"strings"
	"testing"
)

// The kept -v=9 log holds the CLI's display and the counted mustWrite records, and none of
// the records that print resources' values.
func TestKeepPreviewLogDropsRecordsButTheWrites(t *testing.T) {
	const secret = "plaintext-key-material"
	in := strings.Join([]string{
		`Previewing update (bench):`,
		`{"time":"2026-11-29T14:33:05.1Z","level":"INFO","msg":"Planner decided not to update 'urn:x' after diff (same) (inputs=map[key:{` + secret + `}])","v":7}`,
		`{"time":"2026-11-29T14:33:05.2Z","level":"INFO","msg":"SnapshotManager: mustWrite() true because of Inputs","v":9}`,
		`I1129 14:33:05.094340  4242 step_generator.go:1] inputs=map[key:{` + secret + `}]`,
		`I1129 14:33:05.094341  4242 snapshot.go:386] SnapshotManager: mustWrite() true because of Provider`,
		`    27 unchanged`,
		`error: preview failed`,
	}, "\n") + "\n"
	var out strings.Builder
	writes, err := keepPreviewLog(strings.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	if writes != 2 {
		t.Errorf("counted %d state writes, want 2", writes)
	}
	kept := out.String()
	if strings.Contains(kept, secret) {
		t.Errorf("the kept log holds a record that prints values:\n%s", kept)
	}
	for _, want := range []string{"Previewing update", "because of Inputs", "because of Provider", "27 unchanged", "error: preview failed"} {
		if !strings.Contains(kept, want) {
			t.Errorf("the kept log lost %q:\n%s", want, kept)
		}
	}
}
