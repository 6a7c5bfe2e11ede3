package talosapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// A control plane whose etcd service does not run (here it waits for the
// bootstrap; in a new cluster, or after a reboot, it is joining) has no
// member to ask: Talos's etcd client would wait out its 5 s dial timeout,
// and every health check attempt, of every node, waited with it. The check
// says what its service list says and does not ask.
func TestHealthDoesNotAskAStoppedEtcdForItsMembers(t *testing.T) {
	t.Parallel()

	c := bootOneCP(t, simtest.Version, 2*time.Minute)
	c.applyConfig(t)

	req := talosapi.HealthRequest{ControlPlanes: []string{c.target.Node}, Creds: c.target.Creds}
	waiting := func(rep *talosapi.HealthReport) bool {
		return strings.Contains(strings.Join(rep.Problems, "\n"), "etcd Preparing")
	}

	// the configured boot: apid answers, etcd waits for the bootstrap
	for i := 0; i < 400 && !waiting(talosapi.CheckHealth(c.ctx, req, c.o)); i++ {
		time.Sleep(25 * time.Millisecond)
	}

	before := c.sim.EtcdDialTimeouts()
	rep := talosapi.CheckHealth(c.ctx, req, c.o)

	if !waiting(rep) {
		t.Fatalf("problems %q, want the etcd service waiting", rep.Problems)
	}

	if n := c.sim.EtcdDialTimeouts() - before; n != 0 || strings.Contains(strings.Join(rep.Problems, "\n"), "etcd members") {
		t.Fatalf("the check asked the stopped etcd for its members (%d dial timeouts): %q", n, rep.Problems)
	}
}
