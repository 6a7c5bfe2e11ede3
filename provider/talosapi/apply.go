package talosapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/proxmoxtalos/proxmoxtalos/provider/killpoint"
)

// ApplyRequest is a machine configuration to apply to a node.
type ApplyRequest struct {
	// Config is the machine configuration (YAML, possibly several documents).
	Config []byte
	// Mode is how the change takes effect on a configured node. A node in
	// maintenance mode installs with auto (or reboot/try when asked).
	Mode ApplyMode
	// TryTimeout is how long Talos keeps a try-mode config before rolling
	// back; zero means Talos's default (one minute).
	TryTimeout time.Duration
	// NoWait returns once the node accepted the configuration, without
	// waiting for it to run it.
	NoWait bool
	// Running is the configuration the node runs before the apply, when
	// known: it tells the Pending paths.
	Running []byte
}

// ApplyResult says what happened.
type ApplyResult struct {
	// Via is the mode of the API server that accepted the configuration.
	Via Mode
	// Applied is how it took effect: no-reboot, reboot, staged or try; a
	// maintenance-mode install is reported as reboot (the node installs and
	// reboots into the installed system).
	Applied ApplyMode
	// Details is the node's own summary ("Applied configuration without a
	// reboot").
	Details string
	// Warnings are validation warnings the node returned.
	Warnings []string
	// Digest is ConfigDigest of the applied configuration.
	Digest string
	// Version is the Talos version the node runs afterwards, when known.
	Version string
	// Unverified says why the node could not be checked to run the
	// configuration yet ("" when it was).
	Unverified string
	// Pending are the changed paths that take effect only at the node's
	// next reboot: a Talos version that applies without a reboot
	// (talosconfig.AppliesWithoutReboot) applied a change that needed one.
	// With Applied try they never take effect (the configuration is not
	// saved, and is rolled back).
	Pending []string
}

// Apply sends a machine configuration to the node, in maintenance mode or
// over mTLS depending on what the node answers, then waits until the node
// runs it: at once for no-reboot and try, after the reboot for reboot and
// for a maintenance-mode install, and until it is saved for staged.
func Apply(ctx context.Context, t Target, req ApplyRequest, o Options) (*ApplyResult, error) {
	o = o.withDefaults()

	cfg, err := loadConfig(req.Config)
	if err != nil {
		return nil, err
	}

	digest, err := digestOf(cfg)
	if err != nil {
		return nil, err
	}

	res := &ApplyResult{Digest: digest}

	// bootBefore: the boot ID read before a configured node is told to
	// reboot (mode reboot), which reboots even when it runs this
	// configuration already, so the digest alone cannot tell the new boot.
	var bootBefore string

	// rebootAfter: the node took the configuration without a reboot because
	// it has no mode reboot (Talos 1.14); the provider reboots it.
	var rebootAfter bool

	err = o.poll(ctx, fmt.Sprintf("node %s to accept the machine configuration", t.Node), func(ctx context.Context) (bool, string, error) {
		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			return false, state, err
		}
		defer conn.Close() //nolint:errcheck

		mode := req.Mode
		if mode == "" {
			mode = ApplyAuto
		}

		if mode, err = installMode(cfg, conn, mode, o); err != nil {
			return false, "", err
		}

		areq := &machineapi.ApplyConfigurationRequest{Data: req.Config, Mode: mode.proto()}
		if mode == ApplyTry && req.TryTimeout > 0 {
			areq.TryModeTimeout = durationpb.New(req.TryTimeout)
		}

		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		if bootBefore, err = bootBeforeApply(actx, conn, t, mode); err != nil {
			return false, state, err
		}

		var resp *machineapi.ApplyConfigurationResponse

		resp, rebootAfter, err = sendApply(actx, conn, areq, mode, o)
		if err != nil {
			if classify(err) == failPermanent {
				return false, "", stop(fmt.Errorf("node %s refused the machine configuration (mode %s, %s): %s", t.Node, mode, conn.Mode, statusMessage(err)))
			}

			return false, state, err
		}

		killpoint.Reach("after-config-applied")

		res.Via = conn.Mode
		res.Version = conn.version
		res.Applied = mode

		if msgs := resp.GetMessages(); len(msgs) > 0 {
			res.Details = msgs[0].GetModeDetails()
			res.Warnings = msgs[0].GetWarnings()

			if conn.Mode == ModeSecure {
				res.Applied = modeFromProto(msgs[0].GetMode())
			}
		}

		if conn.Mode == ModeMaintenance || rebootAfter {
			res.Applied = ApplyReboot
		}

		return true, state, nil
	})
	if err != nil {
		return nil, err
	}

	o.report("node %s accepted the machine configuration via %s (%s)", t.Node, res.Via, res.Applied)

	res.Pending = pendingPaths(req, res)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()

	reboot, err := rebootIfAsked(wctx, t, res, rebootAfter, bootBefore, o)
	if err != nil {
		return res, err
	}

	o.machineSilent(t, silenceAfter(res, cfg))

	for _, w := range res.Warnings {
		o.report("node %s warns: %s", t.Node, w)
	}

	if req.NoWait {
		return res, nil
	}

	if res.Via == ModeSecure && res.Applied == ApplyTry {
		// machined sets a try-mode configuration before it answers
		// (v1alpha1_server.go ApplyConfiguration, TRY), and rolls it back
		// after the timeout: waiting to see it could miss it.
		return res, nil
	}

	if res.Via == ModeMaintenance && t.Creds == nil {
		res.Unverified = "no client configuration was given, so the installed system cannot be checked"
		o.report("node %s: %s", t.Node, res.Unverified)

		return res, nil
	}

	if res.Via == ModeMaintenance && cfg.Machine() != nil && cfg.Machine().Type() == machine.TypeWorker {
		// A worker's apid serves with a certificate it gets from trustd on
		// the control planes, through the cluster endpoint (a VIP exists
		// only after bootstrap), so before bootstrap it does not answer at
		// all. Wait until it has left maintenance mode; health checks see
		// the rest.
		if err := waitLeftMaintenance(ctx, t, o); err != nil {
			return res, err
		}

		res.Unverified = "a worker's Talos API answers once it has a certificate from the control planes (after bootstrap)"
		o.report("node %s installed; %s", t.Node, res.Unverified)

		return res, nil
	}

	installDisk := ""
	if cfg.Machine() != nil {
		installDisk = cfg.Machine().Install().Disk()
	}

	if res.Applied != ApplyReboot {
		bootBefore = ""
	}

	version, err := waitConfig(ctx, t, configWait{digest: digest, staged: res.Applied == ApplyStaged, installDisk: installDisk, bootBefore: bootBefore, reboot: reboot}, o)
	if err != nil {
		return res, err
	}

	res.Version = version

	return res, nil
}

// installMode is the mode to send: mode, or for a node in maintenance
// mode the one it installs with; a stop() error when the node lacks the
// configuration's install disk.
func installMode(cfg config.Provider, conn *Conn, mode ApplyMode, o Options) (ApplyMode, error) {
	if conn.Mode != ModeMaintenance {
		return mode, nil
	}

	node := conn.target.Node

	if disk := installDiskMissing(cfg, conn.disks); disk != "" {
		return mode, stop(fmt.Errorf("node %s has no disk %s to install Talos on (it has %s): set the install disk to one of these (scsi disks are /dev/sdX, virtio disks /dev/vdX)", node, disk, strings.Join(conn.disks, ", ")))
	}

	if mm := mode.maintenanceMode(); mm != mode {
		o.report("node %s is in maintenance mode: installing with mode %s (mode %s applies to later changes)", node, mm, mode)

		return mm, nil
	}

	return mode, nil
}

// bootBeforeApply reads the boot ID of a configured node about to be told
// to reboot (mode reboot: "" for other modes, and for a node in maintenance
// mode, whose install the configuration's digest tells). A node that
// refuses the read is not sent the configuration.
func bootBeforeApply(ctx context.Context, conn *Conn, t Target, mode ApplyMode) (string, error) {
	if conn.Mode != ModeSecure || mode != ApplyReboot {
		return "", nil
	}

	id, err := readBootID(ctx, conn)
	if err != nil && bootIDFailure(err) == failPermanent {
		return "", stop(fmt.Errorf("%w; the configuration was not sent (mode reboot)", bootIDRefused(t.Node, "to run the configuration", err)))
	}

	return id, err
}

// silenceAfter is how long the node is expected not to answer after it
// accepted a configuration as res says (0: it keeps answering).
func silenceAfter(res *ApplyResult, cfg config.Provider) time.Duration {
	switch {
	case res.Via == ModeMaintenance && cfg.Machine() != nil && cfg.Machine().Type() == machine.TypeWorker:
		// its API answers only with a certificate from the control
		// planes' trustd, on a new cluster after the bootstrap
		return installSilence + certSilence
	case res.Via == ModeMaintenance:
		return installSilence
	case res.Applied == ApplyReboot:
		return rebootSilence
	}

	return 0
}

// waitLeftMaintenance waits until a node no longer answers in maintenance
// mode: it is installing, rebooting, or up with its configuration.
func waitLeftMaintenance(ctx context.Context, t Target, o Options) error {
	return o.poll(ctx, fmt.Sprintf("node %s to leave maintenance mode", t.Node), func(ctx context.Context) (bool, string, error) {
		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			return classify(err) == failTransient, state, err
		}
		defer conn.Close() //nolint:errcheck

		if conn.Mode == ModeMaintenance {
			return false, "still in maintenance mode", nil
		}

		return true, state, nil
	})
}

// installingState is what a node in maintenance mode after an apply may be
// doing. Talos 1.12's install task resolves machine.install.disk with
// filepath.EvalSymlinks before it runs the installer, so a disk that does not
// exist fails the install with "lstat <disk>: no such file or directory" on
// the console, and the node boots the ISO again (siderolabs/talos v1.12.5,
// internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_sequencer_tasks.go,
// Install).
func installingState(disk string) string {
	if disk == "" {
		disk = "<disk>"
	}

	return "in maintenance mode: still installing, or its install failed and it booted the ISO again " +
		"(an install disk that does not exist fails it: the console shows \"lstat " + disk + ": no such file or directory\")"
}

// configWait is what waitConfig waits for.
type configWait struct {
	// digest is the configuration's ConfigDigest.
	digest string
	// staged: saved for the next boot is enough.
	staged bool
	// installDisk ("" when unknown) is named in the progress of a node
	// still in maintenance mode.
	installDisk string
	// bootBefore, when set, is the boot ID before a reboot was asked for:
	// the node must answer from another boot.
	bootBefore string
	// reboot follows the events of a reboot asked through the Reboot API
	// (nil for none): the wait ends when it never started (LOCKED). One
	// that failed is waited out: machined turns a sequence error other
	// than LOCKED or CANCELED into a fatal error and reboots 10 s later
	// (siderolabs/talos v1.14.0-rc.1 internal/app/machined/main.go
	// runEntrypoint, handle), into the configuration already saved.
	// ApplyConfiguration's own reboot (mode reboot before Talos 1.14) takes
	// the lock over (WithTakeover, v1alpha1_server.go ApplyConfiguration,
	// v1.12.9 and v1.13.0), so it is never LOCKED, and runs without an
	// actor ID, so no event of it is ours to follow.
	reboot *sequenceWatch
}

// waitConfig waits until a configured node runs the configuration with the
// given digest (or, with staged, has saved it for the next boot), reachable
// over mTLS and, when the node reports its stage, running. It returns the
// Talos version the node runs.
func waitConfig(ctx context.Context, t Target, w configWait, o Options) (string, error) {
	o = o.withDefaults()
	what := fmt.Sprintf("node %s to run the applied configuration", t.Node)
	if w.staged {
		what = fmt.Sprintf("node %s to save the staged configuration", t.Node)
	}

	var version string

	err := o.poll(ctx, what, func(ctx context.Context) (bool, string, error) {
		if msg, locked := w.reboot.outcome(); locked {
			return false, "", stop(sequenceLocked(t.Node, "reboot", msg))
		}

		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			return false, state, err
		}
		defer conn.Close() //nolint:errcheck

		if conn.Mode == ModeMaintenance {
			// A failed install (Talos's sequencer reboots 10 s after an
			// error) brings a node booted from the ISO back here.
			return false, installingState(w.installDisk), nil
		}

		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		done, desc, err := w.check(actx, conn, t, state)
		if done {
			version = conn.version
		}

		return done, desc, err
	})

	return version, rebootFailedAtTimeout(err, t.Node, w.reboot)
}

// rebootFailedAtTimeout is err, a wait for the new boot after a reboot
// whose sequence failed on the node (watch), quoting the node when the wait
// timed out: the reboot Talos does after the failure never came.
func rebootFailedAtTimeout(err error, node string, watch *sequenceWatch) error {
	msg, _ := watch.outcome()

	var we *WaitError
	if msg == "" || !errors.As(err, &we) || !errors.Is(we.Cause, context.DeadlineExceeded) {
		return err
	}

	seen := ""
	if we.LastState != "" {
		seen = "; last seen: " + we.LastState
	}

	return fmt.Errorf("node %s saved the configuration but its reboot failed on the node (the node said: %s) and it did not "+
		"come back in a new boot within %s, although Talos reboots a node 10 s after a failed sequence%s. See its logs with "+
		"`talosctl -n %s dmesg`, fix the cause and run `pulumi up` again", node, msg, roundDuration(we.Elapsed), seen, node)
}

// ReadConfig reads the configuration a node runs and the one saved for its
// next boot, over mTLS (a refresh reports either that does not parse). A
// node in maintenance mode is reported with a nil NodeConfig and
// ModeMaintenance.
func ReadConfig(ctx context.Context, t Target, o Options) (*NodeConfig, Mode, string, error) {
	return readConfig(ctx, t, o, readNodeConfig)
}

// ReadConfigFor is ReadConfig before an apply in mode: the configuration
// saved for the next boot is read only for a staged apply, which compares
// it (configReader).
func ReadConfigFor(ctx context.Context, t Target, o Options, mode ApplyMode) (*NodeConfig, Mode, string, error) {
	return readConfig(ctx, t, o, configReader(mode == ApplyStaged))
}

// ReadActiveConfig is ReadConfig for a caller that needs the active
// configuration's text only (the component's reading of what each node
// runs): the persistent configuration, a second COSI read that machinery
// parses, and the digests are left out (NodeConfig.Active only).
func ReadActiveConfig(ctx context.Context, t Target, o Options) (*NodeConfig, Mode, string, error) {
	return readConfig(ctx, t, o, readActiveConfig)
}

func readConfig(ctx context.Context, t Target, o Options, read func(context.Context, *Conn) (*NodeConfig, error)) (*NodeConfig, Mode, string, error) {
	nc, mode, version, conn, err := readConfigKeep(ctx, t, o, read)
	conn.Close() //nolint:errcheck

	return nc, mode, version, err
}

// ReadActiveConfigKeep is ReadActiveConfig that leaves the connection open
// (nil unless the node answered over mTLS; the caller closes it), so that
// other nodes of the cluster can be read through it
// (ReadActiveConfigThrough).
func ReadActiveConfigKeep(ctx context.Context, t Target, o Options) (*NodeConfig, Mode, string, *Conn, error) {
	return readConfigKeep(ctx, t, o, readActiveConfig)
}

func readConfigKeep(ctx context.Context, t Target, o Options, read func(context.Context, *Conn) (*NodeConfig, error)) (
	nc *NodeConfig, mode Mode, version string, kept *Conn, err error) {
	conn, err := Connect(ctx, t, o)
	if err != nil {
		return nil, "", "", nil, err
	}

	if conn.Mode == ModeMaintenance {
		conn.Close() //nolint:errcheck

		return nil, ModeMaintenance, "", nil, nil
	}

	nc, mode, version, err = readOn(ctx, conn, t, o, read)
	if err != nil {
		conn.Close() //nolint:errcheck

		return nc, mode, version, nil, err
	}

	return nc, mode, version, conn, nil
}

// readOn reads a configured node's configuration on an open connection.
func readOn(ctx context.Context, conn *Conn, t Target, o Options, read func(context.Context, *Conn) (*NodeConfig, error)) (*NodeConfig, Mode, string, error) {
	o = o.withDefaults()

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	nc, err := read(actx, conn)
	if err != nil {
		return nil, ModeSecure, conn.version, onNode(t.Node, err)
	}

	return nc, ModeSecure, conn.version, nil
}
