package talos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// The controllers of kube-controller-manager and kube-scheduler that the
// bootstrap workloads (and a user's) need to run, reduced to their visible
// outcome: DaemonSets put a pod on every node they fit
// (pkg/controller/daemon), Deployments own one ReplicaSet per pod template
// (pkg/controller/deployment; a changed template replaces the pods at once
// rather than rolling), ReplicaSets keep their replica count
// (pkg/controller/replicaset), the garbage collector removes what lost its
// owner, the scheduler binds pending pods to a Ready node they tolerate,
// and each node's kubelet runs the pods bound to it (kubeagent_pods.go for
// the status it reports). StatefulSets, Jobs and volumes are not simulated.

// workloadState is one round's view of the API.
type workloadState struct {
	nodes       map[string]obj // by name
	daemonSets  []obj
	deployments []obj
	replicaSets []obj
	pods        []obj
}

func (a *kubeAgent) listWorkloads(ctx context.Context, nodes []obj) (*workloadState, error) {
	w := &workloadState{nodes: map[string]obj{}}

	for _, n := range nodes {
		w.nodes[fieldString(n, "metadata", "name")] = n
	}

	for _, l := range []struct {
		path, apiVersion, kind string
		into                   *[]obj
	}{
		{"/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet", &w.daemonSets},
		{"/apis/apps/v1/deployments", "apps/v1", "Deployment", &w.deployments},
		{"/apis/apps/v1/replicasets", "apps/v1", "ReplicaSet", &w.replicaSets},
		{"/api/v1/pods", "v1", "Pod", &w.pods},
	} {
		var list struct {
			Items []obj `json:"items"`
		}

		if err := a.admin.do(ctx, http.MethodGet, l.path, "", nil, &list); err != nil {
			return nil, err
		}

		// A list's items carry no apiVersion and kind (owner references need them).
		for _, o := range list.Items {
			o["apiVersion"], o["kind"] = l.apiVersion, l.kind
		}

		*l.into = list.Items
	}

	return w, nil
}

// syncWorkloads runs one pass of the controllers over the listed state.
func (a *kubeAgent) syncWorkloads(ctx context.Context, views []kubeletView, nodes []obj) {
	w, err := a.listWorkloads(ctx, nodes)
	if err != nil {
		a.logErr("listing workloads", err)

		return
	}

	kcm := a.admin.as("kube-controller-manager/" + a.kcp.tools.KubernetesVersion + " (linux/amd64) kubernetes")

	a.syncNamespaces(ctx, kcm)
	a.collectGarbage(ctx, kcm, w)

	for _, ds := range w.daemonSets {
		a.syncDaemonSet(ctx, kcm, w, ds)
	}

	for _, d := range w.deployments {
		a.syncDeployment(ctx, kcm, w, d)
	}

	for _, rs := range w.replicaSets {
		a.syncReplicaSet(ctx, kcm, w, rs)
	}

	a.schedule(ctx, w)
	a.runPods(ctx, views, w)
}

// controllerOf is the uid and kind of an object's controlling owner.
func controllerOf(o obj) (kind, uid string) {
	refs, _ := field(o, "metadata", "ownerReferences").([]any)
	for _, r := range refs {
		m, _ := r.(map[string]any)
		if c, _ := m["controller"].(bool); c {
			k, _ := m["kind"].(string)
			u, _ := m["uid"].(string)

			return k, u
		}
	}

	return "", ""
}

func ownerRef(owner obj) []obj {
	return []obj{{
		"apiVersion": fieldString(owner, "apiVersion"), "kind": fieldString(owner, "kind"),
		"name": fieldString(owner, "metadata", "name"), "uid": fieldString(owner, "metadata", "uid"),
		"controller": true, "blockOwnerDeletion": true,
	}}
}

func objPath(o obj, resource string) string {
	group := "/api/v1"
	if v := fieldString(o, "apiVersion"); v != "v1" && v != "" {
		group = "/apis/" + v
	}

	return group + "/namespaces/" + url.PathEscape(fieldString(o, "metadata", "namespace")) + "/" + resource + "/" + url.PathEscape(fieldString(o, "metadata", "name"))
}

func podPath(p obj) string {
	return "/api/v1/namespaces/" + url.PathEscape(fieldString(p, "metadata", "namespace")) + "/pods/" + url.PathEscape(fieldString(p, "metadata", "name"))
}

func terminating(o obj) bool { return field(o, "metadata", "deletionTimestamp") != nil }

// collectGarbage deletes ReplicaSets and pods whose controlling
// DaemonSet/Deployment/ReplicaSet is gone (the garbage collector's
// background deletion), and pods bound to a Node that no longer exists
// (the pod GC).
func (a *kubeAgent) collectGarbage(ctx context.Context, kcm *kubeClient, w *workloadState) {
	uids := map[string]bool{}

	for _, l := range [][]obj{w.daemonSets, w.deployments, w.replicaSets} {
		for _, o := range l {
			uids[fieldString(o, "metadata", "uid")] = true
		}
	}

	owned := func(o obj) bool {
		kind, uid := controllerOf(o)

		switch kind {
		case "DaemonSet", "Deployment", "ReplicaSet":
			return uids[uid]
		default:
			return true
		}
	}

	w.replicaSets = slices.DeleteFunc(w.replicaSets, func(rs obj) bool {
		if owned(rs) {
			return false
		}

		kcm.do(ctx, http.MethodDelete, objPath(rs, "replicasets"), "", nil, nil) //nolint:errcheck

		return true
	})

	w.pods = slices.DeleteFunc(w.pods, func(p obj) bool {
		node := fieldString(p, "spec", "nodeName")
		if owned(p) && (node == "" || w.nodes[node] != nil) {
			return false
		}

		// Mirror pods are kubeagent_pods.go's.
		if kind, _ := controllerOf(p); kind == "Node" {
			return false
		}

		kcm.do(ctx, http.MethodDelete, podPath(p), "", obj{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}, nil) //nolint:errcheck

		return true
	})
}

// podsOf are the live pods an object controls.
func (w *workloadState) podsOf(owner obj) []obj {
	uid := fieldString(owner, "metadata", "uid")

	var out []obj

	for _, p := range w.pods {
		if _, u := controllerOf(p); u == uid && !terminating(p) {
			out = append(out, p)
		}
	}

	return out
}

// templateHash names a pod template: fnv32a of its JSON, in the alphabet
// Kubernetes uses for generated names (pkg/controller/controller_utils.go
// ComputeHash, k8s.io/apimachinery/pkg/util/rand.SafeEncodeString).
func templateHash(template any) string {
	b, _ := json.Marshal(template) //nolint:errchkjson
	h := fnv.New32a()
	h.Write(b) //nolint:errcheck

	const alphabet = "bcdfghjklmnpqrstvwxz2456789"

	s := fmt.Sprint(h.Sum32())
	out := make([]byte, len(s))

	for i := range s {
		out[i] = alphabet[int(s[i])%len(alphabet)]
	}

	return string(out)
}

// newPod is a pod of a controller's template.
func newPod(owner obj, template obj, extraLabels map[string]string, nodeName string) obj {
	meta, _ := deepCopy(obj{"m": field(template, "metadata")})["m"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}

	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}

	for k, v := range extraLabels {
		labels[k] = v
	}

	meta["labels"] = labels
	meta["generateName"] = fieldString(owner, "metadata", "name") + "-"
	meta["namespace"] = fieldString(owner, "metadata", "namespace")
	meta["ownerReferences"] = ownerRef(owner)

	spec, _ := deepCopy(obj{"s": field(template, "spec")})["s"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}

	if nodeName != "" {
		spec["nodeName"] = nodeName
	}

	return obj{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
}

func int64Of(v any) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case int:
		return int64(n)
	case int64:
		return n
	default:
		return 0
	}
}

// patchStatus writes a status when it differs from the object's.
func patchStatus(ctx context.Context, c *kubeClient, o obj, path string, status obj) {
	cur, _ := field(o, "status").(map[string]any)

	same := true

	for k, v := range status {
		a, _ := json.Marshal(v)      //nolint:errchkjson
		b, _ := json.Marshal(cur[k]) //nolint:errchkjson

		if string(a) != string(b) {
			same = false

			break
		}
	}

	if same {
		return
	}

	c.do(ctx, http.MethodPatch, path+"/status", "application/merge-patch+json", obj{"status": status}, nil) //nolint:errcheck
}

func podReady(p obj) bool {
	conds, _ := field(p, "status", "conditions").([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}

	return false
}

// syncDaemonSet: one pod per node the template fits (a DaemonSet's pods
// tolerate unschedulable and not-ready nodes), at the current template.
func (a *kubeAgent) syncDaemonSet(ctx context.Context, kcm *kubeClient, w *workloadState, ds obj) {
	if terminating(ds) {
		return
	}

	template, _ := field(ds, "spec", "template").(map[string]any)
	hash := templateHash(template)
	gen := int64Of(field(ds, "metadata", "generation"))

	byNode := map[string][]obj{}
	for _, p := range w.podsOf(ds) {
		byNode[fieldString(p, "spec", "nodeName")] = append(byNode[fieldString(p, "spec", "nodeName")], p)
	}

	var desired, current, ready, updated, misscheduled int64

	names := slices.Sorted(maps.Keys(w.nodes))
	for _, name := range names {
		fits := podFits(template, w.nodes[name], true)
		pods := byNode[name]

		delete(byNode, name)

		if !fits {
			if len(pods) > 0 {
				misscheduled++
			}

			for _, p := range pods {
				kcm.do(ctx, http.MethodDelete, podPath(p), "", nil, nil) //nolint:errcheck
			}

			continue
		}

		desired++

		var keep obj

		for _, p := range pods {
			if keep == nil && fieldString(p, "metadata", "labels", "controller-revision-hash") == hash {
				keep = p

				continue
			}

			kcm.do(ctx, http.MethodDelete, podPath(p), "", nil, nil) //nolint:errcheck
		}

		if keep == nil {
			pod := newPod(ds, template, map[string]string{"controller-revision-hash": hash, "pod-template-generation": fmt.Sprint(gen)}, name)
			if err := kcm.do(ctx, http.MethodPost, "/api/v1/namespaces/"+url.PathEscape(fieldString(ds, "metadata", "namespace"))+"/pods", "", pod, nil); err != nil {
				a.logErr("daemon set controller creating a pod of "+fieldString(ds, "metadata", "name"), err)
			}

			continue
		}

		current++
		updated++

		if podReady(keep) {
			ready++
		}
	}

	status := obj{
		"currentNumberScheduled": current, "desiredNumberScheduled": desired, "numberMisscheduled": misscheduled,
		"numberReady": ready, "numberAvailable": ready, "updatedNumberScheduled": updated, "observedGeneration": gen,
		"numberUnavailable": nil, // omitted when 0 (null removes it in a merge patch)
	}
	if desired > ready {
		status["numberUnavailable"] = desired - ready
	}

	patchStatus(ctx, kcm, ds, objPath(ds, "daemonsets"), status)
}

// syncDeployment: the ReplicaSet of the current template has the
// deployment's replicas; older ones are scaled to zero.
func (a *kubeAgent) syncDeployment(ctx context.Context, kcm *kubeClient, w *workloadState, d obj) {
	if terminating(d) {
		return
	}

	template, _ := field(d, "spec", "template").(map[string]any)
	hash := templateHash(template)
	replicas := int64(1)

	if r, ok := field(d, "spec", "replicas").(float64); ok {
		replicas = int64(r)
	}

	uid := fieldString(d, "metadata", "uid")

	var cur obj

	var total, ready, updated int64

	for _, rs := range w.replicaSets {
		if _, u := controllerOf(rs); u != uid {
			continue
		}

		n := int64(len(w.podsOf(rs)))
		total += n

		if fieldString(rs, "metadata", "labels", "pod-template-hash") == hash {
			cur = rs
			updated = n

			for _, p := range w.podsOf(rs) {
				if podReady(p) {
					ready++
				}
			}

			if int64Of(field(rs, "spec", "replicas")) != replicas {
				kcm.do(ctx, http.MethodPatch, objPath(rs, "replicasets"), "application/merge-patch+json", obj{"spec": obj{"replicas": replicas}}, nil) //nolint:errcheck
			}

			continue
		}

		if int64Of(field(rs, "spec", "replicas")) != 0 {
			kcm.do(ctx, http.MethodPatch, objPath(rs, "replicasets"), "application/merge-patch+json", obj{"spec": obj{"replicas": 0}}, nil) //nolint:errcheck
		}
	}

	if cur == nil {
		tmpl := deepCopy(template)
		fieldMap(tmpl, "metadata", "labels")["pod-template-hash"] = hash

		selector := deepCopy(obj{"s": field(d, "spec", "selector")})["s"].(map[string]any) //nolint:forcetypeassert
		fieldMap(selector, "matchLabels")["pod-template-hash"] = hash

		rs := obj{
			"apiVersion": "apps/v1", "kind": "ReplicaSet",
			"metadata": obj{
				"name": fieldString(d, "metadata", "name") + "-" + hash, "namespace": fieldString(d, "metadata", "namespace"),
				"labels":          field(tmpl, "metadata", "labels"),
				"annotations":     map[string]string{"deployment.kubernetes.io/desired-replicas": fmt.Sprint(replicas), "deployment.kubernetes.io/revision": "1"},
				"ownerReferences": ownerRef(d),
			},
			"spec": obj{"replicas": replicas, "selector": selector, "template": tmpl},
		}

		path := "/apis/apps/v1/namespaces/" + url.PathEscape(fieldString(d, "metadata", "namespace")) + "/replicasets"
		if err := kcm.do(ctx, http.MethodPost, path, "", rs, nil); err != nil && !isKubeStatus(err, http.StatusConflict) {
			a.logErr("deployment controller creating the replica set of "+fieldString(d, "metadata", "name"), err)
		}
	}

	available := "False"
	if ready >= replicas {
		available = "True"
	}

	status := obj{
		"observedGeneration": int64Of(field(d, "metadata", "generation")),
		"replicas":           total, "updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": ready,
		"conditions": []obj{
			{"type": "Available", "status": available, "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
			{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": fmt.Sprintf("ReplicaSet %q has successfully progressed.", fieldString(d, "metadata", "name")+"-"+hash)},
		},
	}
	status["unavailableReplicas"] = nil
	if total > ready {
		status["unavailableReplicas"] = total - ready
	}

	// A condition's times are kept while its status and reason hold.
	old, _ := field(d, "status", "conditions").([]any)
	now := rfc3339(time.Now())

	for _, c := range status["conditions"].([]obj) { //nolint:forcetypeassert
		c["lastUpdateTime"], c["lastTransitionTime"] = now, now

		for _, o := range old {
			if m, _ := o.(map[string]any); m["type"] == c["type"] && m["status"] == c["status"] && m["reason"] == c["reason"] {
				c["lastUpdateTime"], c["lastTransitionTime"] = m["lastUpdateTime"], m["lastTransitionTime"]
			}
		}
	}

	patchStatus(ctx, kcm, d, objPath(d, "deployments"), status)
}

// syncReplicaSet keeps spec.replicas pods (newest deleted first).
func (a *kubeAgent) syncReplicaSet(ctx context.Context, kcm *kubeClient, w *workloadState, rs obj) {
	if terminating(rs) {
		return
	}

	want := int64(1)
	if r, ok := field(rs, "spec", "replicas").(float64); ok {
		want = int64(r)
	}

	pods := w.podsOf(rs)
	template, _ := field(rs, "spec", "template").(map[string]any)

	for i := int64(len(pods)); i < want; i++ {
		pod := newPod(rs, template, nil, "")
		if err := kcm.do(ctx, http.MethodPost, "/api/v1/namespaces/"+url.PathEscape(fieldString(rs, "metadata", "namespace"))+"/pods", "", pod, nil); err != nil {
			a.logErr("replica set controller creating a pod of "+fieldString(rs, "metadata", "name"), err)

			break
		}
	}

	if int64(len(pods)) > want {
		slices.SortFunc(pods, func(x, y obj) int {
			return cmp.Compare(fieldString(y, "metadata", "creationTimestamp"), fieldString(x, "metadata", "creationTimestamp"))
		})

		for _, p := range pods[:int64(len(pods))-want] {
			kcm.do(ctx, http.MethodDelete, podPath(p), "", nil, nil) //nolint:errcheck
		}

		pods = pods[int64(len(pods))-want:]
	}

	var ready int64

	for _, p := range pods {
		if podReady(p) {
			ready++
		}
	}

	patchStatus(ctx, kcm, rs, objPath(rs, "replicasets"), obj{
		"replicas": int64(len(pods)), "fullyLabeledReplicas": int64(len(pods)), "readyReplicas": ready,
		"availableReplicas": ready, "observedGeneration": int64Of(field(rs, "metadata", "generation")),
	})
}

// syncNamespaces: every namespace gets its "default" ServiceAccount (the
// service account controller; pods without one are refused by the
// ServiceAccount admission plugin) and the kube-root-ca.crt ConfigMap
// (the root CA cert publisher), once.
func (a *kubeAgent) syncNamespaces(ctx context.Context, kcm *kubeClient) {
	var list struct {
		Items []obj `json:"items"`
	}

	if err := kcm.do(ctx, http.MethodGet, "/api/v1/namespaces", "", nil, &list); err != nil {
		return
	}

	if a.namespaces == nil {
		a.namespaces = map[string]bool{}
	}

	for _, ns := range list.Items {
		uid, name := fieldString(ns, "metadata", "uid"), fieldString(ns, "metadata", "name")
		if a.namespaces[uid] || terminating(ns) {
			continue
		}

		base := "/api/v1/namespaces/" + url.PathEscape(name)
		sa := obj{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": obj{"name": "default", "namespace": name}}
		cm := obj{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": obj{"name": "kube-root-ca.crt", "namespace": name, "annotations": map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
			"data":     map[string]string{"ca.crt": string(a.pki.cfg.Cluster().IssuingCA().Crt)},
		}

		ok := true

		for _, o := range []struct {
			path string
			body obj
		}{{base + "/serviceaccounts", sa}, {base + "/configmaps", cm}} {
			if err := kcm.do(ctx, http.MethodPost, o.path, "", o.body, nil); err != nil && !isKubeStatus(err, http.StatusConflict) {
				ok = false
			}
		}

		a.namespaces[uid] = ok
	}
}
