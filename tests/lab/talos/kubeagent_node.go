package talos

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"time"
)

type nodeResult struct {
	registered bool
	cordoned   bool   // Talos's cordon is in the API
	ready      string // the Ready condition's status in the API
	gone       bool   // no such Node object
	err        error
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// syncNode plays the kubelet and the controllers for one Node object.
func (a *kubeAgent) syncNode(ctx context.Context, v kubeletView, cur obj, alloc *cidrAllocator) nodeResult {
	path := "/api/v1/nodes/" + url.PathEscape(v.name)

	if cur == nil {
		switch {
		case !v.live:
			return nodeResult{gone: true}
		case v.registered:
			// Deleted while its kubelet runs: the kubelet does not register
			// again until it restarts (kubelet_node_status.go registers once).
			return nodeResult{registered: true, gone: true}
		}

		if err := a.register(ctx, v); err != nil {
			a.logErr("kubelet registering node "+v.name, err)

			return nodeResult{err: err}
		}

		delete(a.posted, v.name)

		if err := a.kubelet(v.name, v.version).do(ctx, http.MethodGet, path, "", nil, &cur); err != nil {
			return nodeResult{registered: true, err: err}
		}
	}

	res := nodeResult{registered: v.live || v.registered, ready: nodeReadyStatus(cur)}

	if v.live {
		if st, err := a.postStatus(ctx, v, cur); err != nil {
			res.err = err
			a.logErr("kubelet posting the status of node "+v.name, err)
		} else if st != nil {
			cur, res.ready = st, nodeReadyStatus(st)
		}

		a.renewLease(ctx, v, fieldString(cur, "metadata", "uid"))
	} else if res.ready != "Unknown" {
		// The node lifecycle controller (kube-controller-manager
		// pkg/controller/nodelifecycle): no heartbeat, every condition Unknown.
		if st, err := a.markUnknown(ctx, cur); err == nil {
			cur, res.ready = st, "Unknown"
		}
	}

	for _, ctl := range []struct {
		ua string
		fn func(obj, kubeletView, *cidrAllocator) bool
	}{
		{"talos", talosNodeSpec},
		{"talos-cloud-controller-manager", ccmNodeSpec},
		{"kube-controller-manager", kcmNodeSpec},
	} {
		next := deepCopy(cur)
		if !ctl.fn(next, v, alloc) {
			continue
		}

		var out obj
		if err := a.admin.as(ctl.ua).do(ctx, http.MethodPut, path, "", next, &out); err != nil {
			res.err = err
			a.logErr(ctl.ua+" updating node "+v.name, err)

			break // a conflict: the next round reads the object again
		}

		cur = out
	}

	res.cordoned = field(cur, "metadata", "annotations", "talos.dev/cordoned") != nil

	return res
}

// register creates the Node object as the kubelet does at start
// (pkg/kubelet/kubelet_node_status.go initialNode): its well-known labels,
// the taints it registers with, annotations; an object left from an
// earlier boot is taken over.
func (a *kubeAgent) register(ctx context.Context, v kubeletView) error {
	node := obj{
		"apiVersion": "v1", "kind": "Node",
		"metadata": obj{
			"name":   v.name,
			"labels": v.labels,
			"annotations": map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		"spec": obj{"taints": v.taints},
	}

	err := a.kubelet(v.name, v.version).do(ctx, http.MethodPost, "/api/v1/nodes", "", node, nil)
	if isKubeStatus(err, http.StatusConflict) {
		return nil
	}

	return err
}

// postStatus reports the kubelet's status when it changed (or is getting
// old), keeping each condition's transition time while its status holds.
func (a *kubeAgent) postStatus(ctx context.Context, v kubeletView, cur obj) (obj, error) {
	digest := statusDigest(v)
	if p, ok := a.posted[v.name]; ok && p.digest == digest && time.Since(p.at) < statusRepost && nodeReadyStatus(cur) != "Unknown" {
		return nil, nil
	}

	now := rfc3339(time.Now())
	old := map[string]obj{}

	if conds, ok := field(cur, "status", "conditions").([]any); ok {
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				old[fieldString(m, "type")] = m
			}
		}
	}

	conds := make([]obj, 0, len(v.conditions))

	for _, c := range v.conditions {
		since := now
		if o := old[c.Type]; o != nil && fieldString(o, "status") == c.Status {
			since = fieldString(o, "lastTransitionTime")
		}

		conds = append(conds, obj{
			"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message,
			"lastHeartbeatTime": now, "lastTransitionTime": since,
		})
	}

	allocatable := maps.Clone(v.capacity)

	patch := obj{"status": obj{
		"conditions":      conds,
		"addresses":       []map[string]string{{"type": "InternalIP", "address": v.addr}, {"type": "Hostname", "address": v.name}},
		"nodeInfo":        v.nodeInfo,
		"capacity":        v.capacity,
		"allocatable":     allocatable,
		"daemonEndpoints": obj{"kubeletEndpoint": obj{"Port": 10250}},
	}}

	var out obj

	path := "/api/v1/nodes/" + url.PathEscape(v.name) + "/status"
	if err := a.kubelet(v.name, v.version).do(ctx, http.MethodPatch, path, "application/strategic-merge-patch+json", patch, &out); err != nil {
		return nil, err
	}

	a.posted[v.name] = postedStatus{digest: digest, at: time.Now()}

	return out, nil
}

func statusDigest(v kubeletView) string {
	b, _ := json.Marshal([]any{v.addr, v.conditions, v.nodeInfo, v.capacity}) //nolint:errchkjson
	sum := sha256.Sum256(b)

	return fmt.Sprintf("%x", sum[:8])
}

// renewLease keeps the node's Lease in kube-node-lease fresh
// (pkg/kubelet/nodelease): created with the Node as owner, renewed every
// 10 s.
func (a *kubeAgent) renewLease(ctx context.Context, v kubeletView, uid string) {
	if time.Since(a.leases[v.name]) < leaseRenew {
		return
	}

	c := a.kubelet(v.name, v.version)
	path := "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + url.PathEscape(v.name)
	renew := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00")

	var lease obj

	err := c.do(ctx, http.MethodGet, path, "", nil, &lease)

	switch {
	case isKubeStatus(err, http.StatusNotFound):
		lease = obj{
			"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
			"metadata": obj{"name": v.name, "namespace": "kube-node-lease", "ownerReferences": []obj{{
				"apiVersion": "v1", "kind": "Node", "name": v.name, "uid": uid,
			}}},
			"spec": obj{"holderIdentity": v.name, "leaseDurationSeconds": leaseDuration, "renewTime": renew},
		}
		err = c.do(ctx, http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", "", lease, nil)
	case err == nil:
		fieldMap(lease, "spec")["renewTime"] = renew
		err = c.do(ctx, http.MethodPut, path, "", lease, nil)
	}

	if err == nil {
		a.leases[v.name] = time.Now()
	}
}

// markUnknown is the node lifecycle controller's answer to a silent kubelet.
func (a *kubeAgent) markUnknown(ctx context.Context, cur obj) (obj, error) {
	next := deepCopy(cur)
	now := rfc3339(time.Now())

	conds, _ := field(next, "status", "conditions").([]any)
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["status"] == "Unknown" {
			continue
		}

		m["status"], m["reason"], m["message"], m["lastTransitionTime"] = "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.", now
	}

	var out obj

	path := "/api/v1/nodes/" + url.PathEscape(fieldString(cur, "metadata", "name")) + "/status"
	err := a.admin.as("kube-controller-manager").do(ctx, http.MethodPut, path, "", next, &out)

	return out, err
}

func nodeReadyStatus(o obj) string {
	conds, _ := field(o, "status", "conditions").([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			s, _ := m["status"].(string)

			return s
		}
	}

	return ""
}

// talosNodeSpec is Talos's node controller (internal/app/machined/pkg/
// controllers/k8s/node_apply.go): the config's labels, annotations and
// taints, with the ones it set before recorded in talos.dev/owned-*
// annotations so that it removes only its own; and cordoning for a drain
// (uncordoning only a node it cordoned itself: talos.dev/cordoned).
func talosNodeSpec(o obj, v kubeletView, _ *cidrAllocator) bool {
	if !v.live {
		return false
	}

	before := deepCopy(o)
	meta := fieldMap(o, "metadata")
	labels := fieldMap(meta, "labels")
	ann := fieldMap(meta, "annotations")

	applyOwned(labels, ann, "talos.dev/owned-labels", v.cfgLabels)
	applyOwned(ann, ann, "talos.dev/owned-annotations", v.cfgAnnotations)

	spec := fieldMap(o, "spec")
	taints := taintsOf(spec)

	var owned []string
	if s, ok := ann["talos.dev/owned-taints"].(string); ok {
		json.Unmarshal([]byte(s), &owned) //nolint:errcheck
	}

	taints = slices.DeleteFunc(taints, func(t kubeTaint) bool { return slices.Contains(owned, t.Key) })
	owned = owned[:0]

	for _, t := range v.cfgTaints {
		taints = setTaint(taints, t)
		owned = append(owned, t.Key)
	}

	setOwned(ann, "talos.dev/owned-taints", owned)
	setTaints(spec, taints)

	_, cordoned := ann["talos.dev/cordoned"]

	switch {
	case v.cordon && !cordoned:
		spec["unschedulable"] = true
		ann["talos.dev/cordoned"] = "true"
	case !v.cordon && cordoned:
		delete(spec, "unschedulable")
		delete(ann, "talos.dev/cordoned")
	}

	return !reflect.DeepEqual(before, o)
}

func applyOwned(target, ann map[string]any, key string, want map[string]string) {
	var owned []string
	if s, ok := ann[key].(string); ok {
		json.Unmarshal([]byte(s), &owned) //nolint:errcheck
	}

	for _, k := range owned {
		if _, keep := want[k]; !keep {
			delete(target, k)
		}
	}

	keys := slices.Sorted(maps.Keys(want))
	for _, k := range keys {
		target[k] = want[k]
	}

	setOwned(ann, key, keys)
}

func setOwned(ann map[string]any, key string, keys []string) {
	if len(keys) == 0 {
		delete(ann, key)

		return
	}

	sort.Strings(keys)
	b, _ := json.Marshal(keys) //nolint:errchkjson
	ann[key] = string(b)
}

// ccmNodeSpec is the cloud controller manager's node initialisation: the
// providerID, then the uninitialized taint goes (k8s.io/cloud-provider
// controllers/node).
func ccmNodeSpec(o obj, v kubeletView, _ *cidrAllocator) bool {
	spec := fieldMap(o, "spec")
	if v.providerID == "" || !v.live || spec["providerID"] != nil && spec["providerID"] != "" {
		return false
	}

	spec["providerID"] = v.providerID
	setTaints(spec, slices.DeleteFunc(taintsOf(spec), func(t kubeTaint) bool {
		return t.Key == "node.cloudprovider.kubernetes.io/uninitialized"
	}))

	return true
}

// kcmNodeSpec is kube-controller-manager on the Node: a pod CIDR from the
// cluster's (--allocate-node-cidrs, nodeipam), and the taints that follow
// the Ready condition and spec.unschedulable (nodelifecycle,
// TaintNodesByCondition and the NoExecute taint manager).
func kcmNodeSpec(o obj, _ kubeletView, alloc *cidrAllocator) bool {
	before := deepCopy(o)
	spec := fieldMap(o, "spec")

	if s, _ := spec["podCIDR"].(string); s == "" {
		if cidr := alloc.next(); cidr != "" {
			spec["podCIDR"], spec["podCIDRs"] = cidr, []string{cidr}
		}
	}

	taints := taintsOf(spec)
	ready := nodeReadyStatus(o)
	added := map[string]bool{}

	want := map[string]bool{
		"node.kubernetes.io/not-ready":     ready == "False",
		"node.kubernetes.io/unreachable":   ready == "Unknown",
		"node.kubernetes.io/unschedulable": spec["unschedulable"] == true,
	}

	for key, on := range want {
		effects := []string{"NoSchedule", "NoExecute"}
		if key == "node.kubernetes.io/unschedulable" {
			effects = effects[:1]
		}

		for _, eff := range effects {
			has := slices.ContainsFunc(taints, func(t kubeTaint) bool { return t.Key == key && t.Effect == eff })

			switch {
			case on && !has:
				taints = append(taints, kubeTaint{Key: key, Effect: eff})
				added[key+"|"+eff] = true
			case !on && has:
				taints = slices.DeleteFunc(taints, func(t kubeTaint) bool { return t.Key == key && t.Effect == eff })
			}
		}
	}

	setTaintsTimed(spec, taints, added)

	return !reflect.DeepEqual(before, o)
}

func taintsOf(spec map[string]any) []kubeTaint {
	raw, _ := spec["taints"].([]any)
	out := make([]kubeTaint, 0, len(raw))

	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}

		t := kubeTaint{Key: fieldString(m, "key"), Value: fieldString(m, "value"), Effect: fieldString(m, "effect")}
		out = append(out, t)
	}

	return out
}

func setTaint(taints []kubeTaint, t kubeTaint) []kubeTaint {
	for i := range taints {
		if taints[i].Key == t.Key && taints[i].Effect == t.Effect {
			taints[i] = t

			return taints
		}
	}

	return append(taints, t)
}

// setTaints writes taints back, keeping each existing taint's timeAdded.
func setTaints(spec map[string]any, taints []kubeTaint) {
	setTaintsTimed(spec, taints, nil)
}

// setTaintsTimed: the NoExecute taints in added get timeAdded now (the taint
// manager stamps the ones it adds).
func setTaintsTimed(spec map[string]any, taints []kubeTaint, added map[string]bool) {
	now := rfc3339(time.Now())
	times := map[string]any{}

	raw, _ := spec["taints"].([]any)
	for _, r := range raw {
		if m, ok := r.(map[string]any); ok && m["timeAdded"] != nil {
			times[fieldString(m, "key")+"|"+fieldString(m, "effect")] = m["timeAdded"]
		}
	}

	if len(taints) == 0 {
		delete(spec, "taints")

		return
	}

	out := make([]any, 0, len(taints))

	for _, t := range taints {
		m := map[string]any{"key": t.Key, "effect": t.Effect}
		if t.Value != "" {
			m["value"] = t.Value
		}

		if ta, ok := times[t.Key+"|"+t.Effect]; ok {
			m["timeAdded"] = ta
		} else if added[t.Key+"|"+t.Effect] && t.Effect == "NoExecute" {
			m["timeAdded"] = now
		}

		out = append(out, m)
	}

	spec["taints"] = out
}

func deepCopy(o obj) obj {
	b, _ := json.Marshal(o) //nolint:errchkjson

	var out obj

	json.Unmarshal(b, &out) //nolint:errcheck

	return out
}

// cidrAllocator hands out /24s of the cluster's first pod CIDR that no
// Node has yet (kube-controller-manager's range allocator, --node-cidr-mask-size 24).
type cidrAllocator struct {
	base netip.Prefix
	used map[netip.Prefix]bool
	next func() string
}

func newCIDRAllocator(podCIDRs []string, nodes []obj) *cidrAllocator {
	a := &cidrAllocator{used: map[netip.Prefix]bool{}}

	for _, n := range nodes {
		if p, err := netip.ParsePrefix(fieldString(n, "spec", "podCIDR")); err == nil {
			a.used[p] = true
		}
	}

	if len(podCIDRs) > 0 {
		if p, err := netip.ParsePrefix(podCIDRs[0]); err == nil && p.Addr().Is4() && p.Bits() <= 24 {
			a.base = p.Masked()
		}
	}

	a.next = func() string {
		if !a.base.IsValid() {
			return ""
		}

		for addr := a.base.Addr(); a.base.Contains(addr); {
			p := netip.PrefixFrom(addr, 24)
			if !a.used[p] {
				a.used[p] = true

				return p.String()
			}

			b := addr.As4()
			if b[2] == 255 {
				b[1]++
				b[2] = 0
			} else {
				b[2]++
			}

			addr = netip.AddrFrom4(b)
		}

		return ""
	}

	return a
}
