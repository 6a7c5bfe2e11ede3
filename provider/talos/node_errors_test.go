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

// nodeErr names the node by its label when the error does not name it.
func TestNodeErrNamesAnUnnamedNode(t *testing.T) {
	t.Parallel()

	err := nodeErr("10.5.0.2", "cp1 (10.5.0.2)", "moving the control plane components of %s to v1.34.1", errors.New("the patch does not apply"))
	if got, want := err.Error(), "moving the control plane components of node cp1 (10.5.0.2) to v1.34.1: the patch does not apply"; got != want {
		t.Errorf("nodeErr = %q, want %q", got, want)
	}
}
