package talos

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestSweepRemovesOnlyDeadOwnersDirs: a work directory whose owner is gone
// (here: this pid with another start time, as after a pid reuse) is
// removed; one owned by a live process and one without an owner file (not
// the lab's, or not yet written) are kept.
func TestSweepRemovesOnlyDeadOwnersDirs(t *testing.T) {
	root := t.TempDir()
	mk := func(name, owner string) string {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "etcd-1"), 0o700); err != nil {
			t.Fatal(err)
		}

		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, pidFileName), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}

		return dir
	}

	live := procIdentity(os.Getpid())
	if live == "" {
		t.Skip("no /proc")
	}

	dead := mk(workDirPrefix+"dead", fmt.Sprintf("%d 0", os.Getpid()))
	alive := mk(workDirPrefix+"alive", live)
	foreign := mk(workDirPrefix+"foreign", "")
	other := mk("other-dir", fmt.Sprintf("%d 0", os.Getpid()))

	sweepWorkDirs(root)

	for dir, want := range map[string]bool{dead: false, alive: true, foreign: true, other: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(dir), err == nil, want)
		}
	}
}
