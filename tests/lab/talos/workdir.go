package talos

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// A killed test (go test -timeout, ^C, OOM) never reaches Close, and its
// work directory (etcd data, 64 MB WAL segments per member) stays in the
// temp dir. Each directory therefore carries a pid file naming the process
// that made it; New sweeps directories whose process is gone. Directories
// without that file are never touched.
const workDirPrefix, pidFileName = "talos-lab-", ".talos-lab-owner"

var sweepOnce sync.Once

// writeOwner records this process (pid and its start time, so a reused pid
// does not keep a directory alive forever).
func writeOwner(dir string) {
	own := procIdentity(os.Getpid())
	if own == "" {
		return // no /proc: the directory is then never swept
	}

	os.WriteFile(filepath.Join(dir, pidFileName), []byte(own), 0o600) //nolint:errcheck // best effort
}

// sweepDeadWorkDirs removes the work directories of lab processes that are
// gone (once per process).
func sweepDeadWorkDirs() {
	sweepOnce.Do(func() { sweepWorkDirs(os.TempDir()) })
}

func sweepWorkDirs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, workDirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, pidFileName))
		if err != nil {
			continue // not ours, or its owner has not written it yet
		}

		pid, _, _ := strings.Cut(string(b), " ")
		if n, err := strconv.Atoi(pid); err == nil && n > 0 && procIdentity(n) != string(b) {
			os.RemoveAll(dir) //nolint:errcheck // best effort: the next process tries again
		}
	}
}

// procIdentity is "pid starttime" (field 22 of /proc/<pid>/stat, clock
// ticks since boot) or "" when the process does not exist.
func procIdentity(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}

	// The command name (field 2) may hold spaces: count after its ")".
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}

	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}

	return fmt.Sprintf("%d %s", pid, f[19]) // f[0] is field 3
}
