// Package killpoint is a test hook: it kills the provider process at a
// named point of its work, the way a crash, an OOM kill or a lost CI runner
// does, so that tests can prove that what the next run does recovers.
//
// It acts only when the environment variable PROXMOXTALOS_TEST_KILL_AT is
// set (tests set it; nothing else should), and is a no-op otherwise:
//
//	PROXMOXTALOS_TEST_KILL_AT=<point>[#<n>]
//
// kills the process with SIGKILL (no deferred cleanup, no answer to the
// engine) the n-th time (default: the first) any operation of the process
// reaches <point>. With PROXMOXTALOS_TEST_KILL_TARGET=cli as well, it kills
// the `pulumi` CLI that started the provider instead (its parent process,
// and only if that is a program named pulumi), the way Ctrl-C twice, an OOM
// kill of the CLI or a lost CI runner does: the provider itself goes on with
// the operation until it notices that its engine is gone. The points:
//
//	after-vmid-allocation      a VMID was chosen, nothing created yet
//	after-create-task-started  POST /nodes/{node}/qemu answered with its task
//	after-clone-task-started   POST .../clone answered with its task
//	after-config               the VM's configuration was applied, not yet started
//	after-start                the VM was started, the create not yet handed back
//	after-hand-over            the VM is marked as handed to Pulumi, which has
//	                           not recorded it yet
//	after-download-started     POST .../download-url answered with its task
//	after-destroy-task-started DELETE /nodes/{node}/qemu/{vmid} answered with its task
//	after-config-applied       a Talos node accepted a machine configuration
//	after-bootstrap            a Talos node accepted the etcd bootstrap
//	after-upgrade-accepted     a Talos node accepted an OS upgrade
//	after-reset-accepted       a Talos node accepted a reset (destroy)
package killpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// EnvVar names the variable that arms the hook.
const EnvVar = "PROXMOXTALOS_TEST_KILL_AT"

// TargetVar names the variable that chooses what the hook kills: the
// provider (unset or "provider") or the CLI that started it ("cli").
const TargetVar = "PROXMOXTALOS_TEST_KILL_TARGET"

var (
	mu      sync.Mutex
	reached = map[string]int{}
)

// Reach is called at a named point; it returns unless the hook names this
// point and this is the n-th time it is reached.
func Reach(point string) {
	spec := os.Getenv(EnvVar)
	if spec == "" || point == "" {
		return
	}
	name, nth := parse(spec)
	if name != point {
		return
	}
	mu.Lock()
	reached[point]++
	hit := reached[point] == nth
	mu.Unlock()
	if hit && os.Getenv(TargetVar) == "cli" {
		killCLI(spec)
		return
	}
	if hit {
		fmt.Fprintf(os.Stderr, "killpoint: %s=%s: killing the provider (pid %d)\n", EnvVar, spec, os.Getpid())
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

func parse(spec string) (string, int) {
	name, n, found := strings.Cut(strings.TrimSpace(spec), "#")
	nth := 1
	if found {
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			nth = v
		}
	}
	return name, nth
}

// killCLI kills the provider's parent, the CLI, and returns. A parent that
// is not pulumi (the provider was started some other way, or the CLI is
// already gone and the provider was handed to init) is left alone: the
// test then sees a CLI that was not killed.
func killCLI(spec string) {
	ppid := os.Getppid()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	if err != nil || filepath.Base(exe) != "pulumi" {
		fmt.Fprintf(os.Stderr, "killpoint: %s=%s: the parent (pid %d, %q) is not the pulumi CLI: not killed\n", EnvVar, spec, ppid, exe)
		return
	}
	fmt.Fprintf(os.Stderr, "killpoint: %s=%s: killing the pulumi CLI (pid %d)\n", EnvVar, spec, ppid)
	_ = syscall.Kill(ppid, syscall.SIGKILL)
}
