package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// output tells a missing output from a CLI that failed: the first is ("", false, nil), the
// second an error, never taken for "no kubeconfig". The CLI is a script printing what
// `pulumi stack output --json --show-secrets` prints, or failing as it does without a backend.
func TestOutputMissingVersusFailed(t *testing.T) {
	t.Parallel()
	cli := func(script string) *pulumiCLI {
		bin := filepath.Join(t.TempDir(), "pulumi")
		if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return &pulumiCLI{bin: bin, dir: t.TempDir()}
	}

	ok := cli(`echo '{"kubeconfig": "apiVersion: v1", "nodes": []}'`)
	if v, found, err := ok.output("kubeconfig"); err != nil || !found || v != "apiVersion: v1" {
		t.Errorf("present output: %q, %v, %v", v, found, err)
	}
	if v, found, err := ok.output("talosconfig"); err != nil || found || v != "" {
		t.Errorf("missing output: %q, %v, %v; want not found, no error", v, found, err)
	}
	if _, _, err := ok.output("nodes"); err == nil {
		t.Error("a list output read as a string: want an error")
	}

	failed := cli(`echo "error: failed to load checkpoint" >&2; exit 255`)
	_, found, err := failed.output("kubeconfig")
	if err == nil || found || !strings.Contains(err.Error(), "failed to load checkpoint") {
		t.Errorf("failed CLI: found=%v err=%v; want an error quoting the CLI's message", found, err)
	}
}
