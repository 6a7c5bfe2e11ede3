package talosapi

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/siderolabs/talos/pkg/machinery/client"

	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"

	"github.com/proxmoxtalos/proxmoxtalos/provider/killpoint"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// ImageVersion is the Talos version an installer image reference names by
// its tag: "factory.talos.dev/nocloud-installer/<id>:v1.12.5" is v1.12.5. ok
// is false for references without a semantic-version tag (a digest only,
// "latest").
func ImageVersion(image string) (string, bool) {
	v, ok := talosconfig.ImageTagVersion(image)
	if !ok {
		return "", false
	}

	return talosconfig.TalosTag(v), true
}

// sameVersion compares Talos version tags tolerantly ("v1.12.5" = "1.12.5").
func sameVersion(a, b string) bool {
	va, errA := semver.ParseTolerant(a)
	vb, errB := semver.ParseTolerant(b)

	if errA != nil || errB != nil {
		return strings.TrimPrefix(a, "v") == strings.TrimPrefix(b, "v")
	}

	return va.Equals(vb)
}

// UpgradeRequest is a Talos OS upgrade of one node.
type UpgradeRequest struct {
	// Image is the installer image, e.g.
	// factory.talos.dev/nocloud-installer/<schematic>:v1.12.5.
	Image string
	// Version is the Talos version the node must run afterwards; empty means
	// the image tag's version.
	Version string
	// Stage stages the upgrade to run on the next boot (the node reboots at
	// once to apply it), for nodes where files in use block an upgrade.
	Stage bool
	// Preserve keeps the EPHEMERAL partition of a node older than Talos
	// 1.8. It is sent only to such nodes: see upgradeOptions.
	Preserve bool
	// EvenIfSameVersion upgrades a node that already runs Version: the
	// image changed without a version change (another Image Factory
	// schematic, so other extensions).
	EvenIfSameVersion bool
}

// UpgradeResult reports the versions before and after.
type UpgradeResult struct {
	From, To string
	// Skipped: the node already ran the version, so nothing was sent.
	Skipped bool
	// Accepted: the node accepted the upgrade request (it changes from here).
	Accepted bool

	// preserveDropped: the user's preserve was left out, and said so once.
	preserveDropped bool
	// bootBefore is the node's boot ID read just before the accepted
	// request ("" when a version change's node refused the read).
	bootBefore string
	// actor and eventMark follow the accepted request's events
	// (sequenceWatch).
	actor, eventMark string
}

// preserveFrom is the first Talos that keeps EPHEMERAL on every upgrade: its
// installer ignores the wipe a request without preserve asks for ("system
// disk wipe on upgrade is not supported anymore", siderolabs/talos
// cmd/installer/pkg/install/install.go since b453385bd, v1.8.0-alpha.2).
var preserveFrom = semver.MustParse("1.8.0")

// preserveMatters reports whether preserve changes anything on a node that
// runs Talos running: only before 1.8. A version that does not parse keeps
// the user's choice (the safe side for the node's data).
func preserveMatters(running string) bool {
	v, err := semver.ParseTolerant(running)

	return err != nil || v.LT(preserveFrom)
}

// upgradeOptions are the Upgrade API options for a node that runs Talos
// running. Preserve is sent only where it keeps data (before 1.8): on
// v1.12.9+, v1.13.4+ and v1.14, machined skips its etcd pre-upgrade check
// and the upgrade mutex when preserve is set (v1alpha1_server.go Upgrade,
// v1.14.1 line 517: `!in.GetForce() && !in.GetPreserve()`; siderolabs/talos
// 89e307e58), so on 1.8+ it would only turn that safety check off.
func upgradeOptions(req UpgradeRequest, running string) []client.UpgradeOption {
	return []client.UpgradeOption{
		client.WithUpgradeImage(req.Image),
		client.WithUpgradeStage(req.Stage),
		client.WithUpgradePreserve(req.Preserve && preserveMatters(running)),
	}
}

// upgradeRetryable are the texts of machined's Upgrade errors that pass
// once the cluster settles (v1alpha1_server.go Upgrade: the etcd upgrade
// mutex, and etcd health checks of ValidateForUpgrade).
func upgradeRetryable(err error) bool {
	msg := strings.ToLower(statusMessage(err))

	return strings.Contains(msg, "upgrade mutex") || strings.Contains(msg, "etcd")
}

// Upgrade upgrades Talos on a configured node through the Upgrade API and
// waits until the node runs the new version. It never touches the VM: the
// node installs the new image itself and reboots. A node already on the
// version is left alone, so an interrupted upgrade resumes cleanly.
func Upgrade(ctx context.Context, t Target, req UpgradeRequest, o Options) (*UpgradeResult, error) {
	o = o.withDefaults()

	want := req.Version
	if want == "" {
		v, ok := ImageVersion(req.Image)
		if !ok {
			return nil, fmt.Errorf("installer image %q has no version tag (like :v1.12.5): give the Talos version to expect", req.Image)
		}

		want = v
	}

	res := &UpgradeResult{To: want}

	// A node that comes back on the version it ran, running, did not
	// upgrade (its host lost power during the install, or the installer
	// refused): Talos boots the installed version and runs normally. The
	// upgrade is sent once more; a second loss is an error.
	for attempt := 1; ; attempt++ {
		err := accept(ctx, t, req, want, res, o)
		if err != nil || res.Skipped {
			if err == nil {
				o.report("node %s already runs Talos %s: no upgrade needed", t.Node, want)
			}

			return res, err
		}

		o.report("node %s accepted the upgrade from %s to %s (image %s)", t.Node, res.From, want, req.Image)
		o.machineSilent(t, installSilence)

		err = waitUpgraded(ctx, t, req, want, res, o)

		var lost *UpgradeLostError
		if errors.As(err, &lost) && attempt == 1 {
			o.report("%s; sending the upgrade again", lost.what())

			continue
		}

		return res, err
	}
}

// waitUpgraded waits until a node that accepted an upgrade runs it, or its
// events say that it never started (another sequence held machined's lock)
// or failed (the node's message: an installer that refused it, say).
func waitUpgraded(ctx context.Context, t Target, req UpgradeRequest, want string, res *UpgradeResult, o Options) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()

	seq := "upgrade"
	if req.Stage {
		seq = "stageUpgrade"
	}

	w := watchSequence(wctx, t, res.actor, res.eventMark, []string{seq}, o)

	if sameVersion(res.From, want) {
		// The version does not tell the new image from the old one: wait
		// for the node to answer from another boot.
		return waitRebooted(wctx, t, req.Image, want, res.bootBefore, w, o)
	}

	return waitVersion(wctx, t, want, res.From, res.bootBefore, w, o)
}

// accept sends the upgrade request until the node accepts it; a node that
// already runs want (and !req.EvenIfSameVersion) is left alone (res.Skipped).
func accept(ctx context.Context, t Target, req UpgradeRequest, want string, res *UpgradeResult, o Options) error {
	res.Skipped = false

	return o.poll(ctx, fmt.Sprintf("node %s to accept the upgrade to %s", t.Node, want), func(ctx context.Context) (bool, string, error) {
		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			return false, state, err
		}
		defer conn.Close() //nolint:errcheck

		if conn.Mode == ModeMaintenance {
			return false, "", stop(fmt.Errorf("node %s is in maintenance mode: Talos upgrades need a configured node (apply a configuration, or boot the new version's ISO)", t.Node))
		}

		res.From = conn.version
		if sameVersion(conn.version, want) && !req.EvenIfSameVersion {
			res.Skipped = true

			return true, state, nil
		}

		// The reads before the request have attempts of their own, so
		// that a slow one leaves the upgrade call its whole attempt.
		bctx, bcancel := o.attemptContext(ctx)
		res.bootBefore, err = bootBeforeUpgrade(bctx, conn, t, want)

		bcancel()

		if err != nil {
			return false, "Talos " + conn.version + ", boot ID not read yet", err
		}

		res.eventMark = readBefore(ctx, o, func(actx context.Context) string { return eventMark(actx, conn) })

		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		if req.Preserve && !preserveMatters(conn.version) && !res.preserveDropped {
			res.preserveDropped = true
			o.report("node %s runs Talos %s, which always keeps its EPHEMERAL partition: upgrade.preserve is not sent, "+
				"so that Talos still runs its etcd pre-upgrade check", t.Node, conn.version)
		}

		resp, err := conn.client.UpgradeWithOptions(conn.nodeContext(actx), upgradeOptions(req, conn.version)...)
		if err != nil {
			if classify(err) == failPermanent && !upgradeRetryable(err) {
				return false, "", stop(fmt.Errorf("node %s refused the upgrade to %s: %s", t.Node, req.Image, statusMessage(err)))
			}

			return false, "Talos " + conn.version + ", upgrade not accepted yet", err
		}

		res.Accepted = true
		res.actor = ""

		if msgs := resp.GetMessages(); len(msgs) > 0 {
			res.actor = msgs[0].GetActorId()
		}

		killpoint.Reach("after-upgrade-accepted")

		return true, state, nil
	})
}

// UpgradeLostError: the node accepted an upgrade, went down or into its
// upgrade, and came back running the version it ran before.
type UpgradeLostError struct {
	Node, From, To string
}

func (e *UpgradeLostError) what() string {
	return fmt.Sprintf("node %s came back on Talos %s, running, after it accepted the upgrade to %s: the upgrade was lost "+
		"(the node restarted or lost power before the install finished, the installer refused it, or another upgrade "+
		"was running on it, which makes Talos start no second one: see `talosctl -n %s dmesg`)",
		e.Node, e.From, e.To, e.Node)
}

func (e *UpgradeLostError) Error() string {
	return e.what() + "; it was sent twice. Run `pulumi up` again to retry the upgrade"
}

// WaitVersion waits until a configured node answers over mTLS with the given
// Talos version and, when it reports its stage, is running.
func WaitVersion(ctx context.Context, t Target, want string, o Options) error {
	return waitVersion(ctx, t, want, "", "", nil, o)
}

// waitVersion is WaitVersion; with from set (the version the node ran when
// it accepted an upgrade) a node seen running another version than want
// ends the wait with an *UpgradeLostError once a fact says the upgrade is
// over: it answers from another boot than before (the boot ID read before
// the request), or it was seen in another stage (upgrading, rebooting)
// since and runs again. Talos enters stage upgrading when the sequence
// starts, after the Upgrade call returned (v1alpha1_server.go Upgrade runs
// it in a goroutine), so a node still running its old boot has not started
// yet, however long that takes under load: no time limit but the
// context's decides. Not answering is no such fact either (a node under
// load misses an attempt's deadline too).
func waitVersion(ctx context.Context, t Target, want, from, before string, w *sequenceWatch, o Options) error {
	o = o.withDefaults()

	var (
		left      bool   // the node was seen out of stage running
		lastSeen  string // what the node said when it last answered
		answering = true // the last attempt reached the node
	)

	err := o.poll(ctx, fmt.Sprintf("node %s to come back on Talos %s", t.Node, want), func(ctx context.Context) (bool, string, error) {
		if err := w.ended(t.Node, "upgrade to Talos "+want, sequenceFailed); err != nil {
			return false, "", stop(err)
		}

		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			// Say so: the last answer is stale while the node is down
			// (it showed "stage upgrading" for ten minutes of a VM that
			// its host's restart had left stopped).
			answering = false
			if state == "" {
				state = "not answering"
			}

			if lastSeen != "" {
				state += " (last answer: " + lastSeen + ")"
			}

			return false, state, err
		}
		defer conn.Close() //nolint:errcheck

		answering = true

		if conn.Mode == ModeMaintenance {
			lastSeen = "in maintenance mode"

			return false, lastSeen, nil
		}

		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		desc := "Talos " + conn.version

		stage, haveStage := readStage(actx, conn)
		if haveStage {
			desc += ", stage " + stage.String()
		}

		lastSeen = desc
		running := haveStage && stage == runtimeres.MachineStageRunning

		if haveStage && !running {
			left = true
		}

		if !sameVersion(conn.version, want) {
			if from == "" || !running {
				return false, desc, nil
			}

			over, now, err := upgradeOver(actx, conn, want, before, left)
			if over {
				return false, desc, stop(&UpgradeLostError{Node: t.Node, From: now, To: want})
			}

			return false, desc, err
		}

		if haveStage && !running {
			return false, desc, nil
		}

		return true, desc, nil
	})

	var we *WaitError
	if from != "" && !answering && errors.As(err, &we) {
		return fmt.Errorf("%w. Node %s stopped answering during its upgrade: if its machine is off (a Proxmox VM left "+
			"stopped, for example after its host restarted and the start failed), start it; a TalosCluster's next "+
			"`pulumi up` starts its stopped VMs and retries the upgrade", err, t.Node)
	}

	return err
}

// upgradeOver reports whether a node that ran another version than want,
// in stage running, is done with the upgrade it accepted, and the version
// it runs: it was seen in another stage since (left), or it answers from
// another boot than before. The version and stage are read again after a
// new boot ID: those read first may be the old boot's (a node that
// rebooted into want between the calls). A boot ID not read says nothing:
// the wait goes on.
func upgradeOver(ctx context.Context, conn *Conn, want, before string, left bool) (bool, string, error) {
	if left {
		return true, conn.version, nil
	}

	if before == "" {
		return false, "", nil
	}

	id, err := readBootID(ctx, conn)
	if err != nil || id == before {
		return false, "", err
	}

	resp, err := conn.client.Version(conn.nodeContext(ctx))
	if err != nil || len(resp.GetMessages()) == 0 {
		return false, "", err
	}

	now := resp.GetMessages()[0].GetVersion().GetTag()

	stage, err := readMachineStage(ctx, conn)
	if err != nil {
		return false, "", err
	}

	return !sameVersion(now, want) && stage == runtimeres.MachineStageRunning, now, nil
}

// bootBeforeUpgrade reads the boot ID of a node about to be upgraded, read
// again before each attempt: the request accepted is sent after the boot
// whose ID it returns. A node that refuses the read is not sent a
// same-version upgrade (its reboot could not be told from its running
// on); a version change is sent all the same (the version tells its
// success, and its loss shows in the stage), with "".
func bootBeforeUpgrade(ctx context.Context, conn *Conn, t Target, want string) (string, error) {
	id, err := readBootID(ctx, conn)
	if err == nil || bootIDFailure(err) != failPermanent {
		return id, err
	}

	if !sameVersion(conn.version, want) {
		return "", nil
	}

	return "", stop(fmt.Errorf("%w; the upgrade to %s was not sent", bootIDRefused(t.Node, "into the new installer image (it runs Talos "+want+" already)", err), want))
}
