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
// gives up on it after the client's NodeWait (here 300ms; the lab would
// keep the request for an hour) and every later planning read of that node
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
		NodeWait: 300 * time.Millisecond})
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
	if node, ok := pve.NodeSilent(err); !ok || node != "pve2" || !strings.Contains(err.Error(), "Proxmox node pve2 does not answer (no answer within 300ms)") {
		t.Fatalf("a planning read of a hung node: %v", err)
	}
	if _, err := c.Storages(plan, "pve2"); !silent(err, "pve2") {
		t.Fatalf("a second planning read of the hung node: %v", err)
	}
	if _, err := c.Storages(plan, "pve1"); err != nil {
		t.Fatalf("a planning read of another node: %v", err)
	}
	if served := s.Stats().ByNode["pve2"]; served != 1 || !c.Silent("pve2") {
		t.Fatalf("the lab served %d requests to pve2 (silent %v), want 1: a node found silent is not asked again", served, c.Silent("pve2"))
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
