package talos

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"
)

// tolerates reports whether a pod's tolerations cover a taint
// (k8s.io/api/core/v1 Toleration.ToleratesTaint).
func tolerates(tolerations []any, taint map[string]any) bool {
	for _, t := range tolerations {
		tol, _ := t.(map[string]any)
		key, _ := tol["key"].(string)
		op, _ := tol["operator"].(string)
		effect, _ := tol["effect"].(string)

		if effect != "" && effect != taint["effect"] {
			continue
		}

		if key != "" && key != taint["key"] {
			continue
		}

		switch op {
		case "Exists":
			return true
		case "", "Equal":
			tv, _ := taint["value"].(string)
			if v, _ := tol["value"].(string); v == tv && key != "" {
				return true
			}
		}
	}

	return false
}

// daemonTolerations are the tolerations the DaemonSet controller adds to its
// pods (pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations).
var daemonTolerations = []any{
	map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
	map[string]any{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
	map[string]any{"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
	map[string]any{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
	map[string]any{"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
	map[string]any{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
}

// unfit says why a pod (or template) does not fit a node, "" when it fits:
// untolerated NoSchedule/NoExecute taints, nodeSelector and required node
// affinity (the scheduler's TaintToleration, NodeAffinity and
// NodeUnschedulable filters; wording of their reasons).
func unfit(podish obj, node obj, daemon bool) string {
	spec, _ := field(podish, "spec").(map[string]any)
	tolerations, _ := spec["tolerations"].([]any)

	if daemon {
		tolerations = append(slices.Clone(tolerations), daemonTolerations...)
	} else if u, _ := field(node, "spec", "unschedulable").(bool); u {
		return "node(s) were unschedulable"
	}

	taints, _ := field(node, "spec", "taints").([]any)
	for _, t := range taints {
		taint, _ := t.(map[string]any)
		if taint["effect"] == "PreferNoSchedule" || tolerates(tolerations, taint) {
			continue
		}

		v, _ := taint["value"].(string)

		return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint["key"], v)
	}

	labels, _ := field(node, "metadata", "labels").(map[string]any)

	sel, _ := spec["nodeSelector"].(map[string]any)
	for k, v := range sel {
		if labels[k] != v {
			return "node(s) didn't match Pod's node affinity/selector"
		}
	}

	terms, _ := field(obj(spec), "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms").([]any)
	if len(terms) == 0 {
		return ""
	}

	name := fieldString(node, "metadata", "name")

	for _, t := range terms {
		term, _ := t.(map[string]any)
		exprs, _ := term["matchExpressions"].([]any)
		fields, _ := term["matchFields"].([]any)

		if matchAll(exprs, func(k string) (string, bool) { v, ok := labels[k].(string); return v, ok }) &&
			matchAll(fields, func(k string) (string, bool) { return name, k == "metadata.name" }) {
			return ""
		}
	}

	return "node(s) didn't match Pod's node affinity/selector"
}

func matchAll(exprs []any, get func(string) (string, bool)) bool {
	for _, e := range exprs {
		m, _ := e.(map[string]any)
		key, _ := m["key"].(string)
		op, _ := m["operator"].(string)
		values, _ := m["values"].([]any)
		v, ok := get(key)
		in := ok && slices.Contains(values, any(v))

		switch op {
		case "In":
			if !in {
				return false
			}
		case "NotIn":
			if in {
				return false
			}
		case "Exists":
			if !ok {
				return false
			}
		case "DoesNotExist":
			if ok {
				return false
			}
		default: // Gt, Lt: not simulated
			return false
		}
	}

	return true
}

func podFits(template obj, node obj, daemon bool) bool { return unfit(template, node, daemon) == "" }

// schedule binds each pending pod to a Ready node it fits, preferring the
// node with the fewest pods of the same owner, then the fewest pods
// (the scheduler's spreading scores); a pod that fits nowhere gets
// PodScheduled False with the filters' reasons.
func (a *kubeAgent) schedule(ctx context.Context, w *workloadState) {
	sched := a.admin.as("kube-scheduler/" + a.kcp.tools.KubernetesVersion + " (linux/amd64) kubernetes")
	names := slices.Sorted(maps.Keys(w.nodes))

	for _, p := range w.pods {
		if fieldString(p, "spec", "nodeName") != "" || terminating(p) {
			continue
		}

		if s := fieldString(p, "spec", "schedulerName"); s != "" && s != "default-scheduler" {
			continue
		}

		_, owner := controllerOf(p)
		reasons := map[string]int{}

		var best string

		bestScore := [2]int{}

		for _, name := range names {
			node := w.nodes[name]

			why := unfit(p, node, false)
			if why == "" && nodeReadyStatus(node) != "True" {
				why = "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
			}

			if why != "" {
				reasons[why]++

				continue
			}

			score := [2]int{}

			for _, q := range w.pods {
				if fieldString(q, "spec", "nodeName") == name && !terminating(q) {
					score[1]++

					if _, o := controllerOf(q); o == owner && owner != "" {
						score[0]++
					}
				}
			}

			if best == "" || score[0] < bestScore[0] || score[0] == bestScore[0] && score[1] < bestScore[1] {
				best, bestScore = name, score
			}
		}

		if best == "" {
			var parts []string
			for why, n := range reasons {
				parts = append(parts, fmt.Sprintf("%d %s", n, why))
			}

			sort.Strings(parts)

			msg := fmt.Sprintf("0/%d nodes are available: %s.", len(names), strings.Join(parts, ", "))
			cond := obj{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg}

			if !hasCondition(p, cond) {
				cond["lastTransitionTime"] = rfc3339(time.Now())
				sched.do(ctx, http.MethodPatch, podPath(p)+"/status", "application/strategic-merge-patch+json", //nolint:errcheck
					obj{"status": obj{"conditions": []obj{cond}}}, nil)
			}

			continue
		}

		binding := obj{
			"apiVersion": "v1", "kind": "Binding",
			"metadata": obj{"name": fieldString(p, "metadata", "name"), "namespace": fieldString(p, "metadata", "namespace")},
			"target":   obj{"apiVersion": "v1", "kind": "Node", "name": best},
		}

		if err := sched.do(ctx, http.MethodPost, podPath(p)+"/binding", "", binding, nil); err != nil {
			a.logErr("scheduler binding a pod", err)

			continue
		}

		fieldMap(p, "spec")["nodeName"] = best
	}
}

func hasCondition(p obj, want obj) bool {
	conds, _ := field(p, "status", "conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == want["type"] && m["status"] == want["status"] && m["message"] == want["message"] {
			return true
		}
	}

	return false
}

// runPods plays each node's kubelet for the pods bound to it: a running
// kubelet starts them (host network pods at once, others once the node is
// Ready, i.e. its CNI runs) and reports them Running and Ready, and
// confirms a deletion; while the kubelet is down the node lifecycle
// controller marks its pods not Ready (MarkPodsNotReady).
func (a *kubeAgent) runPods(ctx context.Context, views []kubeletView, w *workloadState) {
	byName := map[string]kubeletView{}
	for _, v := range views {
		byName[v.name] = v
	}

	cri := map[string][]criPod{}
	defer func() { a.sim.setCRIPods(a.c, views, cri) }()

	for _, p := range w.pods {
		name := fieldString(p, "spec", "nodeName")

		v, ours := byName[name]
		if !ours || name == "" {
			continue
		}

		if kind, _ := controllerOf(p); kind == "Node" {
			continue // mirror pods: kubeagent_pods.go
		}

		kubelet := a.kubelet(v.name, v.version)

		switch {
		case terminating(p) && v.live:
			kubelet.do(ctx, http.MethodDelete, podPath(p), "", obj{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}, nil) //nolint:errcheck
		case terminating(p):
		case v.live:
			host, _ := field(p, "spec", "hostNetwork").(bool)
			started := host || nodeReadyStatus(w.nodes[name]) == "True"

			if started {
				cri[name] = append(cri[name], criPodOf(p))
			}

			if started && (!podReady(p) || fieldString(p, "status", "phase") != "Running") {
				kubelet.do(ctx, http.MethodPatch, podPath(p)+"/status", "application/strategic-merge-patch+json", //nolint:errcheck
					obj{"status": runningStatus(p, v, w, host)}, nil)
			}
		case podReady(p):
			cond := obj{"type": "Ready", "status": "False", "lastTransitionTime": rfc3339(time.Now())}
			a.admin.as("kube-controller-manager").do(ctx, http.MethodPatch, podPath(p)+"/status", "application/strategic-merge-patch+json", //nolint:errcheck
				obj{"status": obj{"conditions": []obj{cond}}}, nil)
		}
	}
}

// runningStatus is the status a kubelet reports for a started pod.
func runningStatus(p obj, v kubeletView, w *workloadState, host bool) obj {
	now := rfc3339(time.Now())
	ip := v.addr

	if !host {
		ip = freePodIP(w, v.name)
	}

	started := fieldString(p, "status", "startTime")
	if started == "" {
		started = now
	}

	var statuses, inits []obj

	containers, _ := field(p, "spec", "containers").([]any)
	for _, c := range containers {
		m, _ := c.(map[string]any)
		image, _ := m["image"].(string)
		statuses = append(statuses, obj{
			"name": m["name"], "image": image, "imageID": image, "ready": true, "started": true, "restartCount": 0,
			"containerID": "containerd://" + podContainerID(fieldString(p, "metadata", "uid"), fmt.Sprint(m["name"])),
			"state":       obj{"running": obj{"startedAt": now}},
		})
	}

	initContainers, _ := field(p, "spec", "initContainers").([]any)
	for _, c := range initContainers {
		m, _ := c.(map[string]any)
		image, _ := m["image"].(string)
		inits = append(inits, obj{
			"name": m["name"], "image": image, "imageID": image, "ready": true, "restartCount": 0,
			"state": obj{"terminated": obj{"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now}},
		})
	}

	st := obj{
		"phase": "Running", "hostIP": v.addr, "hostIPs": []obj{{"ip": v.addr}}, "podIP": ip, "podIPs": []obj{{"ip": ip}},
		"startTime": started,
		"conditions": []obj{
			{"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": now},
			{"type": "Initialized", "status": "True", "lastTransitionTime": now},
			{"type": "Ready", "status": "True", "lastTransitionTime": now},
			{"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
			{"type": "PodScheduled", "status": "True", "lastTransitionTime": started},
		},
		"containerStatuses": statuses,
	}

	if len(inits) > 0 {
		st["initContainerStatuses"] = inits
	}

	if cur := fieldString(p, "status", "podIP"); cur != "" {
		st["podIP"], st["podIPs"] = cur, []obj{{"ip": cur}}
	}

	return st
}

// freePodIP is the lowest address of the node's pod CIDR (from .2: .1 is
// the CNI bridge) that no pod on the node has.
func freePodIP(w *workloadState, node string) string {
	prefix, err := netip.ParsePrefix(fieldString(w.nodes[node], "spec", "podCIDR"))
	if err != nil {
		return ""
	}

	used := map[string]bool{}

	for _, p := range w.pods {
		if fieldString(p, "spec", "nodeName") == node {
			used[fieldString(p, "status", "podIP")] = true
		}
	}

	addr := prefix.Masked().Addr().Next()
	for addr = addr.Next(); prefix.Contains(addr); addr = addr.Next() {
		if !used[addr.String()] {
			s := addr.String()
			// Keep it taken for the other pods of this round.
			w.pods = append(w.pods, obj{"spec": obj{"nodeName": node}, "status": obj{"podIP": s}})

			return s
		}
	}

	return ""
}
