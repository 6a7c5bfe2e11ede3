package talos

import (
	"context"
	"errors"

	"github.com/siderolabs/talos/pkg/machinery/config"
)

// validationMode is the runtime mode machinery's validator asks about
// (internal/app/machined/pkg/runtime/mode.go): nocloud runs in "cloud" mode,
// metal in "metal" mode, and only metal requires an install section, unless
// Talos is already installed (machined's modeWrapper for configured nodes).
type validationMode struct {
	platform  string
	installed bool
}

func (m validationMode) String() string {
	if m.platform == PlatformMetal {
		return "metal"
	}

	return "cloud"
}

func (m validationMode) RequiresInstall() bool {
	return m.platform == PlatformMetal && !m.installed
}

func (m validationMode) InContainer() bool { return false }

// validationMode for maintenance mode: the platform's raw mode.
func (n *Node) validationMode() validationMode {
	n.sim.mu.Lock()
	defer n.sim.mu.Unlock()

	return validationMode{platform: n.image.Platform}
}

// runtimeValidate runs machinery's runtime validation against the node's
// resources (its disks, for install disk selectors).
func (n *Node) runtimeValidate(ctx context.Context, cfg config.Provider, mode validationMode) ([]string, error) {
	n.sim.mu.Lock()
	srvs, running := n.servers, n.image.Version
	n.sim.mu.Unlock()

	if srvs == nil {
		return nil, errors.New("node is shutting down")
	}

	warnings, err := cfg.RuntimeValidate(ctx, srvs.state, mode)

	return warnings, kubernetesCheckedFor(running, cfg, err)
}

// runningVersion is the Talos version the node runs ("v1.12.5").
func (n *Node) runningVersion() string {
	n.sim.mu.Lock()
	defer n.sim.mu.Unlock()

	return n.image.Version
}
