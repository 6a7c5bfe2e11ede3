package talosapi

import (
	"errors"
	"strings"
	"testing"

	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
)

// strayPersistent is a node that runs active and has, saved for its next
// boot, a text this provider's machinery does not parse (as newer Talos
// machinery may write); secret is a value in it.
func strayPersistent(t *testing.T, node string) (conn *Conn, digest, secret string) {
	t.Helper()

	secret = "hunter2"
	active := testMachineConfig(t, "/dev/sda")
	bad := "version: v1alpha1\nmachine:\n  type: worker\n  install: " + secret + "\ncluster:\n  id: x\n"

	digest, err := ConfigDigest(active)
	if err != nil {
		t.Fatal(err)
	}

	return connWith(node, map[string]string{string(configres.ActiveID): string(active), string(configres.PersistentID): bad}), digest, secret
}

// Review s10, item 8: an apply in a mode that compares only the active
// configuration (auto, no-reboot, reboot, try) neither reads nor parses
// the persistent one: a stray staged text does not block it (the apply
// replaces it). Its read before the apply (ReadConfigFor) and its wait
// both succeed.
func TestAnApplyThatIsNotStagedIgnoresAPersistentConfigThatDoesNotParse(t *testing.T) {
	t.Parallel()

	for _, mode := range []ApplyMode{ApplyAuto, ApplyNoReboot, ApplyReboot, ApplyTry} {
		conn, digest, _ := strayPersistent(t, "10.5.0.11")

		nc, err := configReader(mode == ApplyStaged)(t.Context(), conn)
		if err != nil {
			t.Fatalf("%s: the read before the apply failed: %v", mode, err)
		}

		if nc.ActiveDigest != digest {
			t.Errorf("%s: ActiveDigest %q, want %q", mode, nc.ActiveDigest, digest)
		}

		done, desc, err := configWait{digest: digest}.check(t.Context(), conn, Target{Node: "10.5.0.11"}, "")
		if err != nil || !done {
			t.Errorf("%s: the wait's check: done %v (%s), error %v; want done", mode, done, desc, err)
		}
	}
}

// A staged apply compares the persistent configuration: its wait stops on
// one that does not parse, naming the node once and no value; so does a
// refresh's read (ReadConfig).
func TestAStagedApplyAndARefreshReportAPersistentConfigThatDoesNotParse(t *testing.T) {
	t.Parallel()

	const node = "10.5.0.12"

	conn, digest, secret := strayPersistent(t, node)

	_, _, err := configWait{digest: digest, staged: true}.check(t.Context(), conn, Target{Node: node}, "")

	var st stopError
	if !errors.As(err, &st) {
		t.Fatalf("the staged wait goes on (%v), want it stopped", err)
	}

	saysNodeConfig(t, err, node, "saved for its next boot", "persistent", secret)

	_, _, _, rerr := readOn(t.Context(), conn, Target{Node: node}, Options{}, readNodeConfig)
	saysNodeConfig(t, rerr, node, "saved for its next boot", "persistent", secret)

	for _, e := range []error{err, rerr} {
		if e != nil && strings.Contains(e.Error(), "node "+node+": ") {
			t.Errorf("the error names the node twice: %s", e)
		}
	}
}
