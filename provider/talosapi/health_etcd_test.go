package talosapi_test

import (
	"slices"
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

// The nodes are asked at once, and the report lists their problems in the
// request's order whichever answers first: a node nothing listens on
// (refused at once) and a configured control plane, in both orders.
func TestHealthReportsNodesInRequestOrder(t *testing.T) {
	t.Parallel()

	c := bootOneCP(t, simtest.Version, 2*time.Minute)
	c.applyConfig(t)

	gone := c.ip(3).String() // no node there
	for _, order := range [][]string{{gone, c.target.Node}, {c.target.Node, gone}} {
		rep := talosapi.CheckHealth(c.ctx, talosapi.HealthRequest{ControlPlanes: order, Creds: c.target.Creds}, c.o)

		var seen []string
		for _, p := range rep.Problems {
			for _, n := range order {
				if strings.HasPrefix(p, "node "+n+":") && !slices.Contains(seen, n) {
					seen = append(seen, n)
				}
			}
		}

		if !slices.Equal(seen, order) {
			t.Fatalf("problems %q name the nodes in the order %v, want %v", rep.Problems, seen, order)
		}
	}
}
