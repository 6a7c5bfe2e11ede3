package pve_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// A node that is a cluster member but does not answer: a planning read
// gives up on it after the client's NodeWait (here 2 s, long enough that
// the reads of the nodes that answer do not outlive half of it on a loaded
// machine; the lab would keep the request for an hour) and every later planning read of that node
// fails at once, without a request, so that a preview asks the node a
// bounded number of times. Other nodes are read as usual, a read that is
// not planning still goes to the node, and an answer clears the mark.
func TestPlanningReadsGiveUpOnANodeThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	s, err := labpve.Start(labpve.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c, err := pve.Connect(ctx, pve.Options{Endpoint: s.Endpoint(), APIToken: s.APIToken(), CACertPEM: string(s.CACertPEM()),
		NodeWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ref := pve.VMRef{Node: "pve2", VMID: 120}
	if err := c.CreateVM(ctx, ref, map[string]any{"cores": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.HangNode("pve2", time.Hour); err != nil {
		t.Fatal(err)
	}
	s.ResetStats()
	plan := pve.Planning(ctx)
	_, err = c.VMConfig(plan, ref)
	if node, ok := pve.NodeSilent(err); !ok || node != "pve2" || !strings.Contains(err.Error(), "Proxmox node pve2 does not answer (no answer within 2s)") {
		t.Fatalf("a planning read of a hung node: %v", err)
	}
	// At most 2: the read, and the probe (GET /nodes/pve2/version) that
	// found the node itself silent too (on a loaded machine the probe may
	// give up before its connection reached the lab). ByNode counts
	// requests as they arrive (ByKind only once answered, which a hung
	// node's are not).
	served := s.Stats().ByNode["pve2"]
	if served < 1 || served > 2 || !c.Silent("pve2") {
		t.Fatalf("the lab got %d requests for pve2 (silent %v), want the read and at most one probe", served, c.Silent("pve2"))
	}
	if _, err := c.Storages(plan, "pve2"); !silent(err, "pve2") {
		t.Fatalf("a second planning read of the hung node: %v", err)
	}
	if again := s.Stats().ByNode["pve2"]; again != served {
		t.Fatalf("a node found silent is asked again by a planning read: the lab got %d requests for pve2, then %d", served, again)
	}
	if _, err := c.Storages(plan, "pve1"); err != nil {
		t.Fatalf("a planning read of another node: %v", err)
	}

	// pveproxy's own answer when the node stays silent for its 30 s
	if err := s.HangNode("pve3", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Bridges(plan, "pve3"); !silent(err, "pve3") || !strings.Contains(err.Error(), "(596 Connection timed out)") {
		t.Fatalf("a planning read answered 596: %v", err)
	}

	if err := s.AnswerNode("pve2"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.VMConfig(ctx, ref); err != nil || c.Silent("pve2") {
		t.Fatalf("a read that is not planning, once the node answers again: %v (silent %v)", err, c.Silent("pve2"))
	}
	if _, err := c.VMConfig(plan, ref); err != nil {
		t.Fatalf("a planning read after the node answered again: %v", err)
	}
}

func silent(err error, node string) bool {
	n, ok := pve.NodeSilent(err)
	return ok && n == node
}

// A node that answers but whose storage status is slow (on real PVE, an
// unreachable NFS/CIFS/PBS storage: pve-storage's storage_info checks each
// storage's server with its own timeouts) is not a silent node: a planning
// read of /nodes/{node}/storage that outlives half of NodeWait sends one probe
// (GET /nodes/{node}/version), which the node answers, and the read's own
// answer is then waited for and used. A proxy in front of the lab holds
// the storage read of pve2 until the probe has come, so the read surely
// outlives that without the test depending on how fast the machine is.
func TestPlanningReadOfASlowStorageOfANodeThatAnswers(t *testing.T) {
	t.Parallel()
	s, err := labpve.Start(labpve.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	front, err := labpve.NewHoldProxy(s.Endpoint(), s.CACertPEM(), "/api2/json/nodes/pve2/version", func(path string) bool {
		return path == "/api2/json/nodes/pve2/storage"
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c, err := pve.Connect(ctx, pve.Options{Endpoint: front.URL(), APIToken: s.APIToken(), CACertPEM: front.CACertPEM(),
		NodeWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Storages(pve.Planning(ctx), "pve2")
	if err != nil || c.Silent("pve2") {
		t.Fatalf("a slow planning read of a node that answers its probe: %v (silent %v)", err, c.Silent("pve2"))
	}
	if len(got) == 0 || len(got) != len(s.Storages("pve2")) {
		t.Fatalf("the slow read's answer is not used: %d storages, the lab has %v", len(got), s.Storages("pve2"))
	}
	if front.Releases.Load() != 1 || front.Held.Load() != 1 {
		t.Fatalf("%d probes and %d storage reads, want 1 each (the read is waited for, not sent again)", front.Releases.Load(), front.Held.Load())
	}
}
