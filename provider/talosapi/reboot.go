package talosapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// A reboot is observed, not inferred: the kernel draws a new random boot ID
// at each boot (/proc/sys/kernel/random/boot_id, proc(5)), so a node that
// answers with another boot ID than the one read before the request has
// rebooted since. talosctl's `reboot --wait` and `upgrade --wait` do the
// same: they read the file through the Read API before the action and wait
// until it differs (siderolabs/talos cmd/talosctl/pkg/talos/action/
// tracker.go, getBootID and BootIDChangedPostCheckFn, since c3a595d5b,
// Talos 1.4). machined's Read serves any regular file
// (v1alpha1_server.go Read) to the os:admin role, which Upgrade, Reset and
// ApplyConfiguration require too (services/machined.go rules).
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// errEmptyBootID: the read ended without data. machinery's ReadStream ends
// a stream cut by a deadline or cancellation as a clean EOF
// (client.ReadStream), so this is a read to try again.
var errEmptyBootID = errors.New("the node sent no boot ID")

// readBootID reads the node's boot ID (the file's text without its newline).
func readBootID(ctx context.Context, c *Conn) (string, error) {
	r, err := c.client.Read(c.nodeContext(ctx), bootIDPath)
	if err != nil {
		return "", err
	}
	defer r.Close() //nolint:errcheck

	b, err := io.ReadAll(io.LimitReader(r, 256))
	if err != nil {
		return "", err
	}

	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", errEmptyBootID
	}

	return id, nil
}

// bootIDFailure is classify for readBootID's errors.
func bootIDFailure(err error) failure {
	if errors.Is(err, errEmptyBootID) {
		return failTransient
	}

	return classify(err)
}

// bootIDRefused says why a reboot cannot be observed on a node that refuses
// to read its boot ID, and what to check.
func bootIDRefused(node, why string, err error) error {
	return fmt.Errorf("node %s refused to read %s (%s), which tells whether it has rebooted %s: "+
		"check that the client configuration has the os:admin role and that the node runs Talos (it reads the file with "+
		"`talosctl -n %s read %s`)", node, bootIDPath, statusMessage(err), why, node, bootIDPath)
}

// waitRebooted waits until the node answers over mTLS from a boot other than
// the one whose ID was read before the request (before), runs Talos want
// and reports stage running. The version cannot tell a
// same-version upgrade's new boot from the old one, nor can a stage seen or
// missed (a node under load stays in stage running for a while after it
// accepted), so there is no grace period that ends in a guess: the wait
// ends when the new boot is seen, or at the context's deadline.
//
// A node that rebooted into another Image Factory schematic than image's
// (the install failed or was lost, and it booted the image it had) ends the
// wait with a *SchematicLostError.
func waitRebooted(ctx context.Context, t Target, image, want, before string, w *sequenceWatch, o Options) error {
	o = o.withDefaults()
	schematic := imageSchematic(image)

	return o.poll(ctx, fmt.Sprintf("node %s to reboot into the new installer image (Talos %s)", t.Node, want), func(ctx context.Context) (bool, string, error) {
		if err := w.ended(t.Node, "upgrade to "+image, sequenceFailed); err != nil {
			return false, "", stop(err)
		}

		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			if state == "" {
				state = "not answering (rebooting)"
			}

			return false, state, err
		}
		defer conn.Close() //nolint:errcheck

		if conn.Mode == ModeMaintenance {
			return false, "in maintenance mode", nil
		}

		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		desc := "Talos " + conn.version

		// The stage must be read: a staged upgrade's node answers from the
		// boot that runs the install, on the old image (Talos 1.13 and
		// later start apid in the initialize sequence, before install:
		// siderolabs/talos b7d70cf62; v1.14.0-rc.1 v1alpha1_sequencer.go
		// Initialize, StartApid), in stage booting or installing
		// (controllers/runtime/machine_status.go).
		stage, stageErr := readMachineStage(actx, conn)
		if stageErr == nil {
			desc += ", stage " + stage.String()
		}

		rebooted, err := bootChanged(actx, conn, t, before, "into the new installer image")

		switch {
		case err != nil:
			return false, desc + ", boot ID not read", err
		case !rebooted:
			return false, desc + ", not rebooted yet (same boot ID)", nil
		case !sameVersion(conn.version, want):
			return false, desc + ", rebooted", nil
		case stageErr != nil:
			return false, desc + ", rebooted, stage not read", stageErr
		case stage != runtimeres.MachineStageRunning:
			return false, desc + ", rebooted", nil
		}

		if schematic == "" {
			return true, desc + ", rebooted", nil
		}

		got, ok, err := readSchematic(actx, conn)
		switch {
		case err != nil && classify(err) == failPermanent:
			return false, "", stop(fmt.Errorf("node %s rebooted after it accepted the upgrade to %s but refused to list its "+
				"extensions (%s), which name the Image Factory schematic it booted: check that the client configuration "+
				"has the os:reader role (`talosctl -n %s get extensions`), then run `pulumi up` again",
				t.Node, image, statusMessage(err), t.Node))
		case err != nil:
			// Not read is not "none": the node may run the old image.
			return false, desc + ", rebooted, schematic not read", err
		case ok && got != schematic:
			return false, "", stop(&SchematicLostError{Node: t.Node, Image: image, Running: got})
		}

		return true, desc + ", rebooted", nil
	})
}

// bootChanged reports whether the node answers from a boot other than the
// one whose ID was before; a node that refuses the read ends the wait
// (stop), since nothing else would tell. why completes "rebooted ...".
func bootChanged(ctx context.Context, conn *Conn, t Target, before, why string) (bool, error) {
	id, err := readBootID(ctx, conn)
	if err != nil {
		if bootIDFailure(err) == failPermanent {
			return false, stop(bootIDRefused(t.Node, why, err))
		}

		return false, err
	}

	return id != before, nil
}

// SchematicLostError: the node rebooted after it accepted an upgrade to the
// version it ran, but runs another Image Factory schematic than the
// upgrade's image. An upgrade sent while another one runs is one way: the
// API accepts it, and the sequence is not started (Controller.Run publishes
// "sequence not started: locked", siderolabs/talos v1.12.5
// v1alpha1_controller.go and v1alpha1_priority_lock.go).
type SchematicLostError struct {
	Node, Image, Running string
}

func (e *SchematicLostError) Error() string {
	return fmt.Sprintf("node %s rebooted after it accepted the upgrade to %s but runs Image Factory schematic %s: "+
		"the upgrade was lost (the installer failed, the node restarted before the install finished, or another upgrade "+
		"was running on it, which makes Talos start no second one: see `talosctl -n %s dmesg`). "+
		"Run `pulumi up` again to retry the upgrade", e.Node, e.Image, e.Running, e.Node)
}
