package talos

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configdiff"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/nethelpers"
)

// ApplyConfiguration applies a config to a configured node in any mode, as
// machined does: validate, decide AUTO by canApplyImmediate, refuse
// NO_REBOOT/TRY when a reboot is needed, STAGED waits for the next reboot,
// TRY rolls back after its timeout, REBOOT reboots. Talos 1.14 refuses
// REBOOT and applies AUTO as NO_REBOOT, checking no change for a reboot
// (dropsApplyReboot). machined serves it in the boot that installs a
// staged upgrade too (lifecycle; Talos 1.13+ answers there), where REBOOT
// cancels the install (takeOver).
func (m *machined) ApplyConfiguration(ctx context.Context, in *machine.ApplyConfigurationRequest) (*machine.ApplyConfigurationResponse, error) {
	n := m.node

	current, err := m.lifecycle()
	if err != nil {
		return nil, err
	}

	mode := in.Mode.String()

	if in.Mode != machine.ApplyConfigurationRequest_TRY {
		n.cancelRollback()
	}

	if err := checkConfigKnown(in.GetData(), n.runningVersion()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	cfg, err := configloader.NewFromBytes(in.GetData())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	if cfg.RawV1Alpha1() == nil {
		return nil, status.Error(codes.InvalidArgument, "the applied machine configuration doesn't contain v1alpha1 config, did you mean to patch the machine config instead?")
	}

	noApplyReboot := dropsApplyReboot(n.runningVersion())
	if in.Mode == machine.ApplyConfigurationRequest_REBOOT && noApplyReboot { //nolint:staticcheck // the mode 1.14 refuses
		return nil, status.Error(codes.Unimplemented, "the REBOOT mode is not supported, please use AUTO or NO_REBOOT modes instead")
	}

	n.sim.mu.Lock()
	vmode := validationMode{platform: n.image.Platform, installed: n.ps != nil}
	n.sim.mu.Unlock()

	warnings, err := cfg.Validate(vmode)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	runtimeWarnings, err := n.runtimeValidate(ctx, cfg, vmode)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	warnings = append(warnings, runtimeWarnings...)

	auto := in.Mode == machine.ApplyConfigurationRequest_AUTO

	details, modeErr, err := decideApplyMode(in, current, cfg, noApplyReboot)
	if err != nil {
		return nil, err
	}

	if auto {
		mode = fmt.Sprintf("%s(%s)", mode, in.Mode)
	}

	if in.DryRun {
		diff, err := configdiff.DiffConfigs(current, cfg)
		if err != nil {
			return nil, fmt.Errorf("failed to generate diff: %w", err)
		}

		if diff == "" {
			diff = "No changes."
		}

		return &machine.ApplyConfigurationResponse{Messages: []*machine.ApplyConfiguration{{
			Mode:        in.Mode,
			ModeDetails: fmt.Sprintf("Dry run summary:\n%s (skipped in dry-run).\nConfig diff:\n\n%s", details, diff),
		}}}, nil
	}

	n.logf("apply config request", "mode", strings.ToLower(mode))

	applied := appliedConfig{cfg: cfg, bytes: in.GetData()}

	switch in.Mode { //nolint:exhaustive
	case machine.ApplyConfigurationRequest_TRY:
		timeout := constants.ConfigTryTimeout
		if in.TryModeTimeout != nil {
			timeout = in.TryModeTimeout.AsDuration()
		}

		details += fmt.Sprintf("\nThe config is applied in 'try' mode and will be automatically reverted back in %s", timeout.String())

		n.rollbackAfter(timeout)
		n.setActive(applied)
	case machine.ApplyConfigurationRequest_NO_REBOOT:
		if err := n.updateState(func(ps *persistState) { ps.config = applied.bytes }); err != nil {
			return nil, err
		}

		n.setActive(applied)
	case machine.ApplyConfigurationRequest_STAGED:
		if err := n.updateState(func(ps *persistState) { ps.config = applied.bytes }); err != nil {
			return nil, err
		}
	case machine.ApplyConfigurationRequest_REBOOT:
		if err := n.updateState(func(ps *persistState) { ps.config = applied.bytes }); err != nil {
			return nil, err
		}

		// Run(SequenceReboot, WithTakeover()) with context.Background():
		// never LOCKED, and no actor ID (v1alpha1_server.go
		// ApplyConfiguration, v1.12.9 and v1.13.0).
		n.takeOver("reboot", nodeEvent{kind: evReboot})
	default:
		return nil, fmt.Errorf("incorrect mode '%s' specified for the apply config call", in.Mode.String())
	}

	return &machine.ApplyConfigurationResponse{Messages: []*machine.ApplyConfiguration{{
		Mode:        in.Mode,
		Warnings:    warnings,
		ModeDetails: details + modeErr,
	}}}, nil
}

// decideApplyMode resolves AUTO (in.Mode is set to what the node does) and
// refuses a NO_REBOOT or TRY change that needs a reboot, as machined does;
// v114 (dropsApplyReboot) checks nothing and resolves AUTO to NO_REBOOT.
func decideApplyMode(in *machine.ApplyConfigurationRequest, current, cfg config.Provider, v114 bool) (details, modeErr string, err error) {
	switch in.Mode { //nolint:exhaustive
	case machine.ApplyConfigurationRequest_TRY, machine.ApplyConfigurationRequest_NO_REBOOT:
		if !v114 {
			if err := canApplyImmediate(current, cfg); err != nil {
				return "", "", status.Error(codes.InvalidArgument, err.Error())
			}
		}

		return "Applied configuration without a reboot", "", nil
	case machine.ApplyConfigurationRequest_STAGED:
		return "Staged configuration to be applied after the next reboot", "", nil
	case machine.ApplyConfigurationRequest_AUTO:
		if !v114 {
			if err := canApplyImmediate(current, cfg); err != nil {
				in.Mode = machine.ApplyConfigurationRequest_REBOOT

				return "Applied configuration with a reboot", ": " + err.Error(), nil
			}
		}

		in.Mode = machine.ApplyConfigurationRequest_NO_REBOOT

		return "Applied configuration without a reboot", "", nil
	default:
		return "Applied configuration with a reboot", "", nil
	}
}

// setActive makes a config the running one (applied live).
func (n *Node) setActive(applied appliedConfig) {
	s := n.sim

	s.mu.Lock()
	n.active, n.activeBytes = applied.cfg, applied.bytes
	n.hostname = configHostname(applied.cfg, n.machine, n.ps, n.addr)

	if applied.cfg != nil {
		s.checkSkew(applied.cfg.Cluster().ID())
	}
	s.mu.Unlock()

	n.publish()
	s.nudge()
}

// rollbackAfter arms the TRY mode timer: when it fires, the config that is
// active now comes back (v1alpha1_runtime.go, RollbackToConfigAfter).
func (n *Node) rollbackAfter(timeout time.Duration) {
	s := n.sim

	s.mu.Lock()
	defer s.mu.Unlock()

	if n.rollback != nil {
		n.rollback.Stop()
	}

	prev := appliedConfig{cfg: n.active, bytes: n.activeBytes}
	gen := n.gen

	n.rollback = time.AfterFunc(s.scaled(timeout), func() {
		s.mu.Lock()
		stale := n.gen != gen || n.active == nil
		n.rollback = nil
		s.mu.Unlock()

		if stale {
			return
		}

		n.logf("rolling back the configuration")
		n.setActive(prev)
	})
}

func (n *Node) cancelRollback() {
	n.sim.mu.Lock()
	defer n.sim.mu.Unlock()

	if n.rollback != nil {
		n.rollback.Stop()
		n.rollback = nil
	}
}

// configHostname is the hostname a configured node ends up with, by
// Talos's layering (network/hostname_config.go): the machine config's
// hostname, else the platform's (cloud-init), else the automatic one
// (stable: from the node identity; addr: talos-<address>).
func configHostname(cfg config.Provider, m Machine, ps *persistState, addr netip.Addr) string {
	hc := cfg.NetworkHostnameConfig()

	if hc != nil && hc.Hostname() != "" {
		return hc.Hostname()
	}

	if h := platformHostname(m); h != "" {
		return h
	}

	if hc == nil {
		return ""
	}

	switch hc.AutoHostname() {
	case nethelpers.AutoHostnameKindStable:
		if ps != nil {
			return stableHostname(ps.nodeID)
		}
	case nethelpers.AutoHostnameKindAddr:
		if addr.IsValid() {
			return "talos-" + strings.NewReplacer(".", "-", ":", "").Replace(addr.String())
		}
	}

	return ""
}

// stableHostname: talos-xxx-yyy from the node identity (base36 of a hash).
func stableHostname(nodeID string) string {
	sum := sha256.Sum256([]byte(nodeID))
	b36 := new(big.Int).SetBytes(sum[:8]).Text(36)

	for len(b36) < 7 {
		b36 = "0" + b36
	}

	return fmt.Sprintf("talos-%s-%s", b36[1:4], b36[4:7])
}

// dropsApplyReboot says whether a Talos version refuses apply mode REBOOT on
// a configured node (Unimplemented, after the config is parsed and has its
// v1alpha1 document, before it is validated), applies AUTO as NO_REBOOT, and
// no longer checks NO_REBOOT/TRY changes for a reboot: "feat: drop apply
// config method reboot" (siderolabs/talos 995bc30d5, first in
// v1.14.0-alpha.2; v1.14.0-rc.1 7a84d742b v1alpha1_server.go
// ApplyConfiguration). In maintenance mode REBOOT is still NO_REBOOT.
func dropsApplyReboot(version string) bool {
	v, err := semver.ParseTolerant(version)
	if err != nil {
		return false
	}

	// The lab serves no 1.14 pre-release before alpha.2.
	return v.Major > 1 || v.Minor >= 14
}
