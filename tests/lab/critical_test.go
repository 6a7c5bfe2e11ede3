package lab

import (
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// TestFreshClusterCriticalPath: the path is built from the lab's own
// durations; a second control plane adds the etcd join to the chain, more
// control planes add nothing (they join at once).
func TestFreshClusterCriticalPath(t *testing.T) {
	t.Parallel()
	pt, nd := pve.RealisticTaskDurations(), talos.RealisticNodeDurations()
	one, three, five := FreshClusterCriticalPath(1), FreshClusterCriticalPath(3), FreshClusterCriticalPath(5)
	if one.VMReady != pt.ISODownload+pt.Create+pt.Start+nd.Boot || one.Configured != one.VMReady+nd.Install+nd.Reboot+nd.Boot {
		t.Fatalf("one control plane: %+v", one)
	}
	if one.Ready != one.Configured+max(nd.CRI+nd.APIServer, nd.Kubelet) {
		t.Fatalf("one control plane ready at %s: %+v", one.Ready, one)
	}
	if three.Ready != one.Ready+nd.EtcdJoin || five.Ready != three.Ready {
		t.Fatalf("ready: 1 cp %s, 3 cps %s, 5 cps %s", one.Ready, three.Ready, five.Ready)
	}
	if got := strings.Join(three.Steps, ", "); !strings.Contains(got, "etcd join") || strings.Contains(strings.Join(one.Steps, ", "), "etcd join") {
		t.Fatalf("steps: %s", got)
	}
}
