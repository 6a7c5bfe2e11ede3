package talos

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// syncMirrorPods: a control plane's kubelet runs the static pods Talos
// writes (kube-apiserver, kube-controller-manager, kube-scheduler) and
// mirrors each into the API (pkg/kubelet/pod/mirror_client.go): a pod in
// kube-system named <component>-<node>, annotated kubernetes.io/config.mirror
// with the static pod's hash, owned by the Node; a changed static pod
// replaces its mirror pod. Orphans (a deleted Node's mirror pods and
// lease) go as kube-controller-manager's garbage collector removes them.
func (a *kubeAgent) syncMirrorPods(ctx context.Context, views []kubeletView, nodes []obj) {
	var pods struct {
		Items []obj `json:"items"`
	}

	if err := a.admin.do(ctx, http.MethodGet, "/api/v1/namespaces/kube-system/pods?labelSelector=tier%3Dcontrol-plane", "", nil, &pods); err != nil {
		return
	}

	existing := map[string]obj{}
	for _, p := range pods.Items {
		existing[fieldString(p, "metadata", "name")] = p
	}

	uids := map[string]string{}
	for _, n := range nodes {
		uids[fieldString(n, "metadata", "name")] = fieldString(n, "metadata", "uid")
	}

	for _, v := range views {
		if !v.live || uids[v.name] == "" {
			continue
		}

		for _, sp := range v.staticPods {
			a.syncMirrorPod(ctx, v, sp, uids[v.name], existing[sp.component+"-"+v.name])
		}
	}

	for name, p := range existing {
		if node := fieldString(p, "spec", "nodeName"); uids[node] == "" {
			a.admin.as("kube-controller-manager").do(ctx, http.MethodDelete, "/api/v1/namespaces/kube-system/pods/"+url.PathEscape(name), "", nil, nil) //nolint:errcheck
		}
	}
}

func (a *kubeAgent) syncMirrorPod(ctx context.Context, v kubeletView, sp staticPod, nodeUID string, cur obj) {
	name := sp.component + "-" + v.name
	path := "/api/v1/namespaces/kube-system/pods/" + url.PathEscape(name)
	hash, containerID := staticPodContainerID(v.name, sp.component, sp.image, v.boot)
	kubelet := a.kubelet(v.name, v.version)

	if cur != nil && fieldString(cur, "metadata", "annotations", "kubernetes.io/config.mirror") != hash {
		// As the kubelet's mirror client deletes it: at once (grace period
		// 0) and only that pod (a UID precondition). A graceful delete
		// would leave the old pod terminating under the same name, and the
		// new one could never be created.
		del := obj{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
			"preconditions": obj{"uid": fieldString(cur, "metadata", "uid")}}
		if err := kubelet.do(ctx, http.MethodDelete, path, "", del, nil); err != nil && !isKubeStatus(err, http.StatusNotFound) {
			return
		}

		cur = nil
	}

	if cur == nil {
		version := imageTag(sp.image)
		pod := obj{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": obj{
				"name": name, "namespace": "kube-system",
				// Talos's static pod labels (control_plane_static_pod.go).
				"labels": map[string]string{
					"tier": "control-plane", "k8s-app": sp.component, "component": sp.component,
					"app.kubernetes.io/name": sp.component, "app.kubernetes.io/version": version,
					"app.kubernetes.io/component": "control-plane", "app.kubernetes.io/managed-by": "Talos",
				},
				"annotations": map[string]string{
					"kubernetes.io/config.hash": hash, "kubernetes.io/config.mirror": hash,
					"kubernetes.io/config.source": "file", "kubernetes.io/config.seen": time.Now().UTC().Format(time.RFC3339Nano),
				},
				"ownerReferences": []obj{{"apiVersion": "v1", "kind": "Node", "name": v.name, "uid": nodeUID, "controller": true}},
			},
			"spec": obj{
				"nodeName": v.name, "hostNetwork": true, "priorityClassName": "system-cluster-critical",
				"containers":  []obj{{"name": sp.component, "image": sp.image, "command": []string{"/usr/local/bin/" + sp.component}}},
				"tolerations": []obj{{"operator": "Exists", "effect": "NoExecute"}},
			},
		}

		if err := kubelet.do(ctx, http.MethodPost, "/api/v1/namespaces/kube-system/pods", "", pod, &cur); err != nil {
			return
		}
	}

	if fieldString(cur, "status", "phase") == "Running" {
		return
	}

	started := rfc3339(v.boot)
	status := obj{"status": obj{
		"phase":     "Running",
		"hostIP":    v.addr,
		"hostIPs":   []obj{{"ip": v.addr}},
		"podIP":     v.addr,
		"podIPs":    []obj{{"ip": v.addr}},
		"startTime": started,
		"conditions": []obj{
			{"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": started},
			{"type": "Initialized", "status": "True", "lastTransitionTime": started},
			{"type": "Ready", "status": "True", "lastTransitionTime": started},
			{"type": "ContainersReady", "status": "True", "lastTransitionTime": started},
			{"type": "PodScheduled", "status": "True", "lastTransitionTime": started},
		},
		"containerStatuses": []obj{{
			"name": sp.component, "image": sp.image, "imageID": sp.image, "ready": true, "started": true,
			"restartCount": 0, "containerID": "containerd://" + containerID,
			"state": obj{"running": obj{"startedAt": started}},
		}},
	}}

	kubelet.do(ctx, http.MethodPatch, path+"/status", "application/strategic-merge-patch+json", status, nil) //nolint:errcheck
}
