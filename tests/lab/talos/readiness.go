package talos

import (
	"fmt"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// machineReadiness is MachineStatus's ready flag and unmet conditions for a
// running node (sim.mu held), with the checks and wording of Talos's
// MachineStatusController (internal/app/machined/pkg/controllers/runtime/
// machine_status.go): required services running and healthy, control plane
// static pods ready, and the Kubernetes node Ready. Time and network are
// always fine in the lab.
func (s *Sim) machineReadiness(n *Node, services []serviceState) (bool, []runtime.UnmetCondition) {
	if n.phase != PhaseRunning && n.phase != PhaseBooting {
		return false, nil
	}

	cp := isControlPlane(n.active)

	var unmet []runtime.UnmetCondition

	if p := servicesProblems(services, cp); p != "" {
		unmet = append(unmet, runtime.UnmetCondition{Name: "services", Reason: p})
	}

	name := strings.ToLower(n.hostname)

	if cp && n.apiReadyAt.IsZero() {
		unmet = append(unmet, runtime.UnmetCondition{Name: "staticPods", Reason: fmt.Sprintf("kube-system/kube-apiserver-%s pending", name)})
	}

	if p := s.nodeReadyProblem(n, name); p != "" {
		unmet = append(unmet, runtime.UnmetCondition{Name: "nodeReady", Reason: p})
	}

	return len(unmet) == 0, unmet
}

func servicesProblems(services []serviceState, cp bool) string {
	required := []string{"apid", "machined", "kubelet"}
	if cp {
		required = append(required, "etcd", "trustd")
	}

	var problems []string

	running := map[string]bool{}

	for _, svc := range services {
		if svc.state != "Running" {
			problems = append(problems, svc.id+" not running")

			continue
		}

		running[svc.id] = true

		if svc.healthKnown && !svc.healthy {
			problems = append(problems, svc.id+" not healthy")
		}
	}

	for _, id := range required {
		if !running[id] && !slices.Contains(problems, id+" not running") {
			problems = append(problems, id+" not running")
		}
	}

	return strings.Join(problems, ", ")
}

func (s *Sim) nodeReadyProblem(n *Node, name string) string {
	if n.active == nil || name == "" {
		return ""
	}

	c := s.clusters[n.active.Cluster().ID()]

	var kn *kubeNode
	if c != nil {
		kn = c.kubeNodes[name]
	}

	if kn == nil || kn.node != n || !kn.bootedAt.Equal(n.bootedAt) || !kn.registered.Equal(n.bootedAt) {
		return fmt.Sprintf("node %q status is not available yet", name)
	}

	// What the API holds, as Talos's node status controller watches it.
	if kn.apiReady != "True" {
		return fmt.Sprintf("node %q is not ready", name)
	}

	return ""
}
