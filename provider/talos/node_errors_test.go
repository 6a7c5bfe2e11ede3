package talos

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// Review s10 closing note, item 4: an error of ControlPlaneComponents named
// its node twice ("control plane components of node X: ... node X ..."),
// since talosapi's errors name the node they are about. Here the node does
// not answer within the operation's time: the error names it once.
func TestControlPlaneComponentsErrorNamesTheNodeOnce(t *testing.T) {
	t.Parallel()

	node := simtest.AddressBlock()(5).String() // nothing listens: refused
	c := newSimCluster(t, simtest.AddressBlock()(2))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()

	r := &ControlPlaneComponents{opts: fastOpts}

	_, _, err := r.run(ctx, ControlPlaneComponentsArgs{Node: node, ClientConfiguration: c.client, KubernetesVersion: "v1.34.1"}, "create")
	if err == nil {
		t.Fatal("run succeeded against a node that does not answer")
	}

	if n := strings.Count(err.Error(), "node "+node); n != 1 {
		t.Errorf("the error names node %s %d times, want once: %s", node, n, err)
	}

	if !strings.HasPrefix(err.Error(), "control plane components of the node: ") {
		t.Errorf("the error does not say what failed first: %s", err)
	}
}

// nodeWho names the node by its label when the error does not name it.
func TestNodeWhoNamesAnUnnamedNode(t *testing.T) {
	t.Parallel()

	if got, want := nodeWho("10.5.0.2", "cp1 (10.5.0.2)", errors.New("the patch does not apply")), "node cp1 (10.5.0.2)"; got != want {
		t.Errorf("nodeWho = %q, want %q", got, want)
	}
}

// Review s11 item 5: the error names the node only when the address ends
// there. Before, "node 10.0.0.1" matched "node 10.0.0.12", and an error
// about another node left the failing one unnamed.
func TestNodeWhoNeedsTheWholeAddress(t *testing.T) {
	t.Parallel()

	for _, c := range []struct {
		node, msg string
		names     bool
	}{
		{"10.0.0.1", "node 10.0.0.1 refused the reset", true},
		{"10.0.0.1", "node 10.0.0.1: connection refused", true},
		{"10.0.0.1", "waiting for node 10.0.0.1", true},
		{"10.0.0.1", "node 10.0.0.12 refused the reset", false},
		{"10.0.0.1", "node 10.0.0.12 refused; node 10.0.0.1 too", true},
		{"10.0.0.1", "waiting for node 10.0.0.1:50000 to answer", true},
		{"10.0.0.1", "waiting for node 10.0.0.12:50000 to answer", false},
		{"fd00::1", "node fd00::1: connection refused", true},
		{"fd00::1", "node fd00::1 does not answer", true},
		{"fd00::1", "node fd00::12 does not answer", false},
		{"fd00::1", "node fd00::1:5 does not answer", false},
		{"cp-1", "node cp-1, stage running", true},
		{"cp-1", "node cp-10, stage running", false},
		{"cp-1", "node cp-1.lan, stage running", false},
	} {
		who := nodeWho(c.node, "LABEL", errors.New(c.msg))
		if got := who == "the node"; got != c.names {
			t.Errorf("nodeWho(%q, %q) = %q; names the node: %v, want %v", c.node, c.msg, who, got, c.names)
		}
	}
}
