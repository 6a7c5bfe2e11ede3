package lab

import (
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// v114 is a Talos version whose promotion pace (2 s, assumed to carry
// siderolabs/talos f80fd0985) stays under etcd's 5 s HealthInterval.
const v114 = "v1.14.0"

// TestFreshClusterCriticalPath: the path is built from the lab's own
// durations; a second control plane adds the etcd join and the bound of its
// start's spread to the chain; more
// join one at a time (EtcdNextJoin apart), which is longer than the API
// server after the first join from 7 control planes on.
func TestFreshClusterCriticalPath(t *testing.T) {
	t.Parallel()
	pt, nd := pve.RealisticTaskDurations(), talos.RealisticNodeDurations(v114)
	one, three, five := FreshClusterCriticalPath(1, v114), FreshClusterCriticalPath(3, v114), FreshClusterCriticalPath(5, v114)
	if one.VMReady != pt.ISODownload+pt.Create+pt.Start+nd.Boot || one.Configured != one.VMReady+nd.Install+nd.Reboot+nd.Boot {
		t.Fatalf("one control plane: %+v", one)
	}
	if one.Ready != one.Configured+max(nd.CRI+nd.APIServer, nd.Kubelet) {
		t.Fatalf("one control plane ready at %s: %+v", one.Ready, one)
	}
	// the join waits up to the spread's bound (the path does not know
	// which node draws what)
	if nd.EtcdStartSpread <= 0 || three.Ready != one.Ready+nd.EtcdJoin+nd.EtcdStartSpread || five.Ready != three.Ready {
		t.Fatalf("ready: 1 cp %s, 3 cps %s, 5 cps %s", one.Ready, three.Ready, five.Ready)
	}
	seven := FreshClusterCriticalPath(7, v114)
	if want := seven.Configured + nd.CRI + nd.EtcdJoin + nd.EtcdStartSpread + 5*nd.EtcdNextJoin; nd.EtcdNextJoin < 5*time.Second || seven.Ready != want || seven.Ready <= five.Ready {
		t.Fatalf("7 control planes ready at %s, want %s (joins %s apart, 5 cps at %s)", seven.Ready, want, nd.EtcdNextJoin, five.Ready)
	}
	if got := strings.Join(seven.Steps, ", "); !strings.Contains(got, "5 more etcd joins one at a time 5s each") {
		t.Fatalf("7 control planes, steps: %s", got)
	}
	if got := strings.Join(three.Steps, ", "); !strings.Contains(got, "etcd start spread up to 2s") || strings.Contains(strings.Join(one.Steps, ", "), "etcd join") {
		t.Fatalf("steps: %s", got)
	}
}

// TestCriticalPathJoinsAtTheVersionsPromotePace: on Talos 1.13 the next
// control plane joins only after the learner's second promotion attempt,
// 15 s plus up to 1 s later, so 5 control planes have 3 such joins on the
// path; on 1.14 (f80fd0985's 2 s) etcd's 5 s HealthInterval sets it.
func TestCriticalPathJoinsAtTheVersionsPromotePace(t *testing.T) {
	t.Parallel()
	old, cur := talos.RealisticNodeDurations("v1.13.9"), talos.RealisticNodeDurations(v114)
	if old.EtcdNextJoin != 16*time.Second || cur.EtcdNextJoin != 5*time.Second {
		t.Fatalf("joins apart: 1.13 %s, want 16s; 1.14 %s, want 5s", old.EtcdNextJoin, cur.EtcdNextJoin)
	}
	five := FreshClusterCriticalPath(5, "v1.13.9")
	if want := five.Configured + old.CRI + old.EtcdJoin + old.EtcdStartSpread + 3*old.EtcdNextJoin; five.Ready != want {
		t.Fatalf("5 control planes on 1.13 ready at %s, want %s (%s)", five.Ready, want, strings.Join(five.Steps, ", "))
	}
	if got := strings.Join(five.Steps, ", "); !strings.Contains(got, "3 more etcd joins one at a time 16s each") {
		t.Fatalf("5 control planes on 1.13, steps: %s", got)
	}
}
