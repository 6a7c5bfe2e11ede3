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
// reaches <point>. The points:
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
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// EnvVar names the variable that arms the hook.
const EnvVar = "PROXMOXTALOS_TEST_KILL_AT"

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
