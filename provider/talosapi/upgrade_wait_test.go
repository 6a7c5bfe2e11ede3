package talosapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

const versionChangeImage = "factory.talos.dev/nocloud-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.12.6"

// waitAnswers waits until the node answered n Version calls after it
// accepted the upgrade; Upgrade returning before is a failure.
func waitAnswers(t *testing.T, node *rebootingNode, n int, done <-chan error) {
	t.Helper()

	for range n {
		select {
		case <-node.answered:
		case err := <-done:
			t.Fatalf("Upgrade returned (err %v) while the node still ran the boot it accepted the upgrade in; calls: %v", err, node.history())
		}
	}
}

// serveAnsweringNode serves a rebootingNode on boot ...001 that reports
// each Version answer on its answered channel.
func serveAnsweringNode(t *testing.T) (*rebootingNode, Target) {
	t.Helper()

	node := &rebootingNode{bootID: "0b1c2d3e-0000-4000-8000-000000000001", answered: make(chan struct{}, 1)}

	return node, serveRebootingNode(t, node)
}

// goWaitVersion waits in the background for target, on boot ...001, to go
// from v1.12.5 to v1.12.6, and sends the result on the channel it returns.
func goWaitVersion(ctx context.Context, target Target) <-chan error {
	lost := make(chan error, 1)

	go func() {
		lost <- waitVersion(ctx, target, "v1.12.6", "v1.12.5", "0b1c2d3e-0000-4000-8000-000000000001", nil, fastOptions())
	}()

	return lost
}

// markAccepted records that node accepted the upgrade now.
func markAccepted(node *rebootingNode) {
	node.mu.Lock()
	node.accepted = time.Now()
	node.mu.Unlock()
}

// A node under load starts its upgrade late, and misses some attempts while
// it does: it answers from the boot it accepted the upgrade in, running the
// old version, after it stopped answering for a while. Neither is a fact
// that the upgrade is over: Upgrade waits for the new version, and sends the
// upgrade once. Before, not answering counted as "left", and the next answer
// on the old version was judged a lost upgrade and sent again (and any
// answer on it after a grace period).
func TestVersionUpgradeWaitsThroughASlowStart(t *testing.T) {
	t.Parallel()

	node, target := serveAnsweringNode(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var lines []string

	o := fastOptions()
	o.Progress = func(msg string) { lines = append(lines, msg) }

	done := make(chan error, 1)

	go func() {
		_, err := Upgrade(ctx, target, UpgradeRequest{Image: versionChangeImage}, o)
		done <- err
	}()

	waitAnswers(t, node, 3, done)
	node.goDown(3)
	waitAnswers(t, node, 3, done)

	node.rebootInto("v1.12.6", "0b1c2d3e-0000-4000-8000-000000000002")

	if err := <-done; err != nil {
		t.Fatalf("Upgrade: %v", err)
	}

	upgrades := 0

	for _, c := range node.history() {
		if c == "upgrade" {
			upgrades++
		}
	}

	if upgrades != 1 {
		t.Errorf("the upgrade was sent %d times, want once; progress:\n%s", upgrades, strings.Join(lines, "\n"))
	}
}

// A node that answers from another boot, running the old version, did not
// install the upgrade it accepted: the wait ends with an UpgradeLostError at
// once (after the one retry), without a stage ever seen out of running.
func TestVersionUpgradeLostOnAnotherBoot(t *testing.T) {
	t.Parallel()

	node, target := serveAnsweringNode(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	lost := goWaitVersion(ctx, target)

	markAccepted(node)

	waitAnswers(t, node, 2, lost)
	node.reboot("0b1c2d3e-0000-4000-8000-000000000002")

	err := <-lost

	var ue *UpgradeLostError
	if !errors.As(err, &ue) || ue.From != "v1.12.5" || ctx.Err() != nil {
		t.Fatalf("waitVersion = %v; want the upgrade reported lost before the timeout", err)
	}
}

// An upgrade sent while another runs on the node is accepted, and Talos
// starts no second sequence ("sequence not started: locked", with no actor:
// v1alpha1_controller.go Run; tests/lab/talos/seqlock.go): the node reboots
// into the other upgrade's version. That is a fact that ours was lost: the
// wait ends at once with an UpgradeLostError naming the version the node
// came back on (Upgrade then sends ours once more). Before, only the
// version the node ran when it accepted counted, and the wait ran to its
// timeout.
func TestVersionUpgradeLostWhenAnotherUpgradeRan(t *testing.T) {
	t.Parallel()

	node, target := serveAnsweringNode(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	markAccepted(node)

	lost := goWaitVersion(ctx, target)

	waitAnswers(t, node, 2, lost)
	node.rebootInto("v1.12.7", "0b1c2d3e-0000-4000-8000-000000000002")

	err := <-lost

	var ue *UpgradeLostError
	if !errors.As(err, &ue) || ue.From != "v1.12.7" || ue.To != "v1.12.6" || ctx.Err() != nil {
		t.Fatalf("waitVersion = %v; want the upgrade reported lost (node on v1.12.7) before the timeout", err)
	}

	if !strings.Contains(err.Error(), "another upgrade was running on it") {
		t.Errorf("error %q does not name a running upgrade as a cause", err)
	}
}
