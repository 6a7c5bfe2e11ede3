package lab

import (
	"fmt"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// CriticalPath is the least time a new cluster can take in the lab at time
// scale 1, every step starting the moment the lab allows it, computed from
// the lab's own durations (pve.RealisticTaskDurations,
// talos.RealisticNodeDurations) so that it stays true when they change.
type CriticalPath struct {
	// VMReady: the boot ISO downloaded, the VM created and started, Talos
	// booted into maintenance mode.
	VMReady time.Duration
	// Configured: the first configuration applied at VMReady, installed,
	// rebooted and booted again (every node at once).
	Configured time.Duration
	// Ready: every node ready (Talos MachineStatus ready: services up, a
	// control plane's kube-apiserver running, the node Ready in Kubernetes).
	Ready time.Duration
	// Steps name the chain that sets Ready, with each step's duration.
	Steps []string
}

// FreshClusterCriticalPath is the critical path of a new cluster with
// controlPlanes control planes (and any number of workers) booting the Talos ISO of
// talosVersion (the etcd join pace depends on it), as the simulator
// runs it (tests/lab/talos): bootstrap is accepted once the first control
// plane's CRI is up; the others join etcd EtcdJoin after their CRI, plus up
// to EtcdStartSpread (each node its own share; the path takes the bound) (they
// need a bootstrapped member: the first one's bootstrap comes no later),
// one at a time, EtcdNextJoin apart (etcd's own serialization, which sets
// the path from 7 control planes on);
// kube-apiserver is ready APIServer after a node's etcd member runs; a
// kubelet registers Kubelet after its node's configured boot once an API
// server answers on the endpoint. Workers boot alongside the control planes
// and need nothing more than the first API server: they never set the path.
func FreshClusterCriticalPath(controlPlanes int, talosVersion string) CriticalPath {
	pt, nd := pve.RealisticTaskDurations(), talos.RealisticNodeDurations(talosVersion)
	var cp CriticalPath
	cp.VMReady = pt.ISODownload + pt.Create + pt.Start + nd.Boot
	cp.Steps = append(cp.Steps,
		fmt.Sprintf("ISO download %s", pt.ISODownload), fmt.Sprintf("VM create %s", pt.Create),
		fmt.Sprintf("VM start %s", pt.Start), fmt.Sprintf("boot to maintenance mode %s", nd.Boot),
		fmt.Sprintf("install %s", nd.Install), fmt.Sprintf("reboot %s", nd.Reboot), fmt.Sprintf("boot %s", nd.Boot))
	cp.Configured = cp.VMReady + nd.Install + nd.Reboot + nd.Boot

	// the first control plane: bootstrapped at CRI, its API server after
	firstAPI := nd.CRI + nd.APIServer
	tail := firstAPI
	chain := []string{fmt.Sprintf("CRI %s", nd.CRI), fmt.Sprintf("API server %s", nd.APIServer)}
	// a joining node's first attempt comes up to EtcdStartSpread after
	// EtcdJoin, a share fixed by its VM name: the path takes the bound, as
	// it does not know the names
	join := nd.CRI + nd.EtcdJoin + nd.EtcdStartSpread
	joinSteps := []string{fmt.Sprintf("CRI %s", nd.CRI), fmt.Sprintf("etcd join %s", nd.EtcdJoin),
		fmt.Sprintf("etcd start spread up to %s", nd.EtcdStartSpread)}
	if controlPlanes > 1 {
		tail = join + nd.APIServer
		chain = append(joinSteps, fmt.Sprintf("API server %s", nd.APIServer))
	}
	// the others join one at a time (talos.NodeDurations.EtcdNextJoin): the
	// last is a voting member, as the health check wants, after the rest
	if controlPlanes > 2 {
		if last := join + time.Duration(controlPlanes-2)*nd.EtcdNextJoin; last > tail {
			tail = last
			chain = append(joinSteps, fmt.Sprintf("%d more etcd joins one at a time %s each", controlPlanes-2, nd.EtcdNextJoin))
		}
	}
	// every node's kubelet registers once an API server answers
	if k := max(nd.Kubelet, firstAPI); k > tail {
		tail, chain = k, []string{fmt.Sprintf("kubelet %s", nd.Kubelet)}
	}
	cp.Ready = cp.Configured + tail
	cp.Steps = append(cp.Steps, chain...)
	return cp
}
