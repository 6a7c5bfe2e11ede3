package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Issue 10 case 7: with one Proxmox node powered off, the preview does not
// wait for it: it warns, naming the node and each VM on it, shows those
// nodes as unknown (not unchanged, not "no node changes"), and an update
// refuses to change anything until the node is back.
func TestClusterPreviewWithAHostOffline(t *testing.T) {
	t.Parallel()
	l, p, onHost := clusterWithNodesOn(t, "pve2")
	// Down for longer than a CLI run may take (harness.CommandTimeout): a
	// preview that waited for the node would fail instead of warning.
	if err := l.PVE.RestartNode("pve2", 30*time.Minute); err != nil {
		t.Fatal(err)
	}

	l.PVE.ResetStats()
	pre := tcTimedPreview(t, p, "preview with pve2 offline")
	t.Logf("preview with pve2 offline:\n%s", pre.Output())
	if pre.ExitCode != 0 {
		t.Fatalf("preview with pve2 offline failed:\n%s", pre)
	}
	vms := l.vmsByName()
	for _, name := range onHost {
		want := fmt.Sprintf("%s: VM %d on pve2 is unknown (pve2 is offline or does not answer): not checked", name, vms[name].VMID)
		if !strings.Contains(pre.Output(), want) {
			t.Errorf("the preview does not warn %q", want)
		}
	}
	if !strings.Contains(pre.Output(), fmt.Sprintf("%d unknown (Proxmox node offline or not answering, not checked)", len(onHost))) || strings.Contains(pre.Output(), "no node changes") {
		t.Errorf("the preview's summary does not show the nodes as unknown")
	}
	// /cluster/resources says pve2 is offline: nothing asks it
	if n := l.PVE.Stats().ByNode["pve2"]; n != 0 {
		t.Errorf("the preview sent %d requests to the offline pve2, want 0", n)
	}

	up := p.Up(t)
	if up.ExitCode == 0 || !strings.Contains(up.Output(), "Proxmox node pve2 is offline") || !strings.Contains(up.Output(), "nothing was changed") {
		t.Errorf("up with pve2 offline: exit %d\n%s", up.ExitCode, up.Output())
	}
}

// A Proxmox node that stays a cluster member but whose API accepts
// connections and never answers (a hung pveproxy or pmxcfs, a link that
// drops packets): pveproxy keeps each request it proxies there for its 30 s
// and then answers 596, and the lab here keeps it for the whole run. The
// preview gives up on the node after a bounded number of requests, warns
// naming it and its VMs, and shows those nodes as unknown, not unchanged.
func TestClusterPreviewWithAHostThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	l, p, onHost := clusterWithNodesOn(t, "pve2")
	if err := l.PVE.HangNode("pve2", 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	l.PVE.ResetStats()
	pre := tcTimedPreview(t, p, "preview with pve2 hung")
	stats := l.PVE.Stats()
	t.Logf("preview with pve2 hung:\n%s\nrequests by node: %v", pre.Output(), stats.ByNode)
	if pre.ExitCode != 0 {
		t.Fatalf("preview with pve2 hung failed:\n%s", pre)
	}
	out := pre.Output()
	if !strings.Contains(out, "Proxmox node pve2 does not answer (no answer within 10s)") {
		t.Errorf("the preview does not say that pve2 does not answer")
	}
	vms := l.vmsByName()
	for _, name := range onHost {
		for _, want := range []string{
			fmt.Sprintf("%s: VM %d on pve2 is unknown (pve2 is offline or does not answer): not checked", name, vms[name].VMID),
			fmt.Sprintf("node pve2 does not answer: VM %s (VM %d on node pve2) could not be checked", name, vms[name].VMID),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the preview does not warn %q", want)
			}
		}
	}
	if !strings.Contains(out, fmt.Sprintf("%d unknown (Proxmox node offline or not answering, not checked)", len(onHost))) || strings.Contains(out, "no node changes") {
		t.Errorf("the preview's summary does not show the nodes as unknown")
	}
	// a count, not a time: the component's first read of pve2 gives up
	// on it (pve.NodeWait), and every later read, the children's checks
	// and diffs included, knows it does not answer and does not ask again
	if n := stats.ByNode["pve2"]; n != 1 {
		t.Errorf("the preview sent %d requests to pve2, want 1", n)
	}
}

// tcTimedPreview runs a preview and logs how long it took (measured for
// docs/taloscluster.md, not asserted: tests carry no wall-clock limits).
func tcTimedPreview(t *testing.T, p *harness.Project, what string) harness.Result {
	t.Helper()
	start := time.Now()
	r := p.Preview(t)
	t.Logf("%s: %s", what, time.Since(start).Round(100*time.Millisecond))
	return r
}

// clusterWithNodesOn creates a 3+2 TalosCluster in a lab and returns the
// names of its nodes whose VMs run on the Proxmox node host.
func clusterWithNodesOn(t *testing.T, host string) (*tcLab, *harness.Project, []string) {
	t.Helper()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "cluster", l.program(3, 2).render(t))
	p.ConfigureLab(t, l.conn)
	tcTimed(t, "create 3+2", func() harness.Result { return p.Up(t) })
	var onHost []string
	for name, vm := range l.vmsByName() {
		if vm.Node == host {
			onHost = append(onHost, name)
		}
	}
	if len(onHost) == 0 {
		t.Fatalf("no node on %s", host)
	}
	return l, p, onHost
}
