package talosapi

import (
	"context"
	"fmt"
	"strings"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"

	"github.com/proxmoxtalos/proxmoxtalos/provider/killpoint"
)

// BootstrapOutcome says how a bootstrap ended.
type BootstrapOutcome string

const (
	// Bootstrapped: this call bootstrapped etcd.
	Bootstrapped BootstrapOutcome = "bootstrapped"
	// AlreadyBootstrapped: the node answered AlreadyExists ("etcd data
	// directory is not empty"), so etcd was bootstrapped before.
	AlreadyBootstrapped BootstrapOutcome = "already-bootstrapped"
)

// bootstrapVerdict maps the node's answer to Bootstrap to done, retry, or
// fail, following machined's Bootstrap (v1alpha1_server.go):
// AlreadyExists when etcd has data (success for us: bootstrap happens once,
// unlike terraform-provider-talos which retries it until its timeout);
// FailedPrecondition "bootstrap is not available yet" and "time is not in
// sync yet" while the node boots (retry); FailedPrecondition "bootstrap can
// only be performed on a control plane node" (fail).
func bootstrapVerdict(err error) (outcome BootstrapOutcome, retry bool, fail error) {
	if err == nil {
		return Bootstrapped, false, nil
	}

	switch client.StatusCode(err) { //nolint:exhaustive
	case codes.AlreadyExists:
		return AlreadyBootstrapped, false, nil
	case codes.FailedPrecondition:
		if strings.Contains(statusMessage(err), "control plane") {
			return "", false, err
		}

		return "", true, nil
	}

	if classify(err) == failPermanent {
		return "", false, err
	}

	return "", true, nil
}

// Bootstrap bootstraps etcd on a control plane node exactly once. It waits
// while the node is unreachable or not ready to bootstrap; a node that was
// bootstrapped before is success (AlreadyBootstrapped).
func Bootstrap(ctx context.Context, t Target, o Options) (BootstrapOutcome, error) {
	o = o.withDefaults()

	var outcome BootstrapOutcome

	err := o.poll(ctx, fmt.Sprintf("node %s to accept the etcd bootstrap", t.Node), func(ctx context.Context) (bool, string, error) {
		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			return false, state, err
		}
		defer conn.Close() //nolint:errcheck

		if conn.Mode == ModeMaintenance {
			return false, "in maintenance mode (no configuration applied yet)", nil
		}

		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		callErr := conn.client.Bootstrap(conn.nodeContext(actx), &machineapi.BootstrapRequest{})

		out, retry, fail := bootstrapVerdict(callErr)
		switch {
		case fail != nil:
			return false, "", stop(fmt.Errorf("node %s refused to bootstrap etcd: %s", t.Node, statusMessage(fail)))
		case retry:
			return false, "not ready to bootstrap: " + statusMessage(callErr), callErr
		}

		outcome = out
		killpoint.Reach("after-bootstrap")

		return true, state, nil
	})
	if err != nil {
		return "", err
	}

	o.report("node %s: etcd %s", t.Node, outcome)

	return outcome, nil
}
