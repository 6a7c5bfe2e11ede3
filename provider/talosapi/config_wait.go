package talosapi

import (
	"context"
	"errors"
	"fmt"

	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// check is one attempt of waitConfig on a configured node's connection:
// done when the node runs (or, staged, has saved) the configuration.
// state is the connection's progress line, kept on a retried error.
func (w configWait) check(ctx context.Context, conn *Conn, t Target, state string) (done bool, desc string, err error) {
	nc, err := configReader(w.staged)(ctx, conn)
	if err != nil {
		if classify(err) == failPermanent {
			return false, "", stop(onNode(t.Node, err))
		}

		return false, state, err
	}

	stage, haveStage := readStage(ctx, conn)

	desc = "Talos " + conn.version
	if haveStage {
		desc += ", stage " + stage.String()
	}

	if w.staged {
		if nc.PersistentDigest == w.digest {
			return true, desc + ", configuration staged", nil
		}

		return false, desc + ", staged configuration not saved yet", nil
	}

	if nc.ActiveDigest != w.digest {
		return false, desc + ", still running the previous configuration", nil
	}

	if haveStage && stage != runtimeres.MachineStageRunning {
		return false, desc + ", configuration active", nil
	}

	if w.bootBefore != "" {
		rebooted, err := bootChanged(ctx, conn, t, w.bootBefore, "to run the configuration")
		if err != nil {
			return false, desc + ", boot ID not read", err
		}

		if !rebooted {
			return false, desc + ", configuration saved, not rebooted yet (same boot ID)", nil
		}
	}

	return true, desc + ", configuration active", nil
}

// configReader reads what a wait or an apply compares: the active
// configuration, and the persistent one (saved for the next boot) only for
// a staged apply. A persistent configuration that does not parse (written
// by newer Talos machinery, say) is an error only where it is compared:
// an apply in any other mode replaces it.
func configReader(staged bool) func(context.Context, *Conn) (*NodeConfig, error) {
	if staged {
		return readNodeConfig
	}

	return readRunningConfig
}

// onNode names the node in err, unless err names it already.
func onNode(node string, err error) error {
	var nce *nodeConfigError
	if errors.As(err, &nce) {
		return err
	}

	return fmt.Errorf("node %s: %w", node, err)
}
