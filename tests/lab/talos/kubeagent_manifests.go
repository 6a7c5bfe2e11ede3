package talos

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// bootstrapObject is one object of Talos's bootstrap manifests.
type bootstrapObject struct {
	path string // the object's API path
	body obj
}

// bootstrapManifests are the workloads Talos's manifest controller applies
// from the BootstrapManifestsConfig (cosi_kube.go), abridged to what clients
// see of them: names, labels, selectors, images, tolerations, host network,
// service accounts, kube-proxy's ClusterRoleBinding (internal/app/machined/
// pkg/controllers/k8s/internal/k8stemplates: kube-proxy.go, coredns.go,
// flannel.go; their rendered testdata/*.yaml). The other RBAC objects beyond
// the bootstrap bindings (kuberbac.go) are left out: the lab's workloads
// make no API calls.
func bootstrapManifests(cfg config.Provider, talosVersion string) []bootstrapObject {
	if cfg == nil {
		return nil
	}

	spec := bootstrapManifestsConfig(cfg, talosVersion).TypedSpec()

	var out []bootstrapObject

	sa := func(name string) {
		out = append(out, bootstrapObject{
			path: "/api/v1/namespaces/kube-system/serviceaccounts/" + name,
			body: obj{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": obj{"name": name, "namespace": "kube-system"}},
		})
	}

	linuxAffinity := obj{"nodeAffinity": obj{"requiredDuringSchedulingIgnoredDuringExecution": obj{
		"nodeSelectorTerms": []obj{{"matchExpressions": []obj{
			{"key": "kubernetes.io/os", "operator": "In", "values": []string{"linux"}},
			{"key": "kubernetes.io/arch", "operator": "In", "values": []string{"amd64", "arm64"}},
		}}},
	}}}
	everywhere := []obj{{"effect": "NoSchedule", "operator": "Exists"}, {"effect": "NoExecute", "operator": "Exists"}}

	if spec.ProxyEnabled {
		sa("kube-proxy")

		out = append(out, bootstrapObject{
			path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kube-proxy",
			body: obj{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
				"metadata": obj{"name": "kube-proxy"},
				"roleRef":  obj{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-proxier"},
				"subjects": []obj{{"kind": "ServiceAccount", "name": "kube-proxy", "namespace": "kube-system"}},
			},
		})

		labels := map[string]string{"k8s-app": "kube-proxy", "tier": "node"}
		out = append(out, bootstrapObject{
			path: "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy",
			body: daemonSet("kube-proxy", labels, obj{
				"affinity": linuxAffinity,
				"containers": []obj{{
					"name": "kube-proxy", "image": spec.ProxyImage,
					"command":         []string{"/usr/local/bin/kube-proxy", "--cluster-cidr=" + strings.Join(spec.PodCIDRs, ","), "--hostname-override=$(NODE_NAME)", "--kubeconfig=/etc/kubernetes/kubeconfig", "--proxy-mode=iptables", "--conntrack-max-per-core=0"},
					"env":             []obj{{"name": "NODE_NAME", "valueFrom": obj{"fieldRef": obj{"fieldPath": "spec.nodeName"}}}},
					"securityContext": obj{"privileged": true},
					"resources":       obj{"requests": obj{"cpu": "100m", "memory": "50Mi"}},
				}},
				"hostNetwork": true, "priorityClassName": "system-cluster-critical",
				"serviceAccountName": "kube-proxy", "tolerations": everywhere,
			}),
		})
	}

	if spec.FlannelEnabled {
		sa("flannel")

		labels := map[string]string{"k8s-app": "flannel", "tier": "node"}
		out = append(out, bootstrapObject{
			path: "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-flannel",
			body: daemonSet("kube-flannel", labels, obj{
				"affinity": linuxAffinity,
				"initContainers": []obj{{
					"name": "install-config", "image": spec.FlannelImage,
					"command": []string{"cp", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"},
				}},
				"containers": []obj{{
					"name": "kube-flannel", "image": spec.FlannelImage,
					"command":         append([]string{"/opt/bin/flanneld", "--ip-masq", "--kube-subnet-mgr"}, spec.FlannelExtraArgs...),
					"securityContext": obj{"privileged": true},
					"resources":       obj{"requests": obj{"cpu": "100m", "memory": "50Mi"}},
				}},
				"hostNetwork": true, "priorityClassName": "system-node-critical",
				"serviceAccountName": "flannel", "tolerations": everywhere,
			}),
		})
	}

	if spec.CoreDNSEnabled {
		sa("coredns")

		out = append(out, bootstrapObject{
			path: "/api/v1/namespaces/kube-system/configmaps/coredns",
			body: obj{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj{"name": "coredns", "namespace": "kube-system"},
				"data": map[string]string{"Corefile": ".:53 {\n    errors\n    health {\n        lameduck 5s\n    }\n    ready\n    log . {\n        class error\n    }\n    prometheus :9153\n    kubernetes " +
					spec.ClusterDomain + " in-addr.arpa ip6.arpa {\n        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n    }\n    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n    cache 30 {\n        denial 9984 5\n    }\n    loop\n    reload\n    loadbalance\n}\n"},
			},
		})

		labels := map[string]string{"k8s-app": "kube-dns"}
		out = append(out, bootstrapObject{
			path: "/apis/apps/v1/namespaces/kube-system/deployments/coredns",
			body: obj{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": obj{"name": "coredns", "namespace": "kube-system", "labels": map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
				"spec": obj{
					"replicas": 2,
					"selector": obj{"matchLabels": labels},
					"strategy": obj{"type": "RollingUpdate", "rollingUpdate": obj{"maxUnavailable": 1}},
					"template": obj{
						"metadata": obj{"labels": labels},
						"spec": obj{
							"affinity": linuxAffinity,
							"containers": []obj{{
								"name": "coredns", "image": spec.CoreDNSImage, "args": []string{"-conf", "/etc/coredns/Corefile"},
								"ports": []obj{
									{"name": "dns", "containerPort": 53, "protocol": "UDP"},
									{"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
									{"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
								},
								"resources":    obj{"limits": obj{"memory": "170Mi"}, "requests": obj{"cpu": "100m", "memory": "70Mi"}},
								"volumeMounts": []obj{{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": true}},
							}},
							"dnsPolicy": "Default", "nodeSelector": map[string]string{"kubernetes.io/os": "linux"},
							"priorityClassName": "system-cluster-critical", "serviceAccountName": "coredns",
							"tolerations": []obj{
								{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane", "operator": "Exists"},
								{"effect": "NoSchedule", "key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists"},
							},
							"volumes": []obj{{"name": "config-volume", "configMap": obj{"name": "coredns", "items": []obj{{"key": "Corefile", "path": "Corefile"}}}}},
						},
					},
				},
			},
		})

		if spec.DNSServiceIP != "" {
			out = append(out, bootstrapObject{
				path: "/api/v1/namespaces/kube-system/services/kube-dns",
				body: obj{
					"apiVersion": "v1", "kind": "Service",
					"metadata": obj{
						"name": "kube-dns", "namespace": "kube-system",
						"labels":      map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
						"annotations": map[string]string{"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
					},
					"spec": obj{
						"clusterIP": spec.DNSServiceIP, "selector": labels,
						"ports": []obj{
							{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
							{"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
							{"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
						},
					},
				},
			})
		}
	}

	return out
}

func daemonSet(name string, labels map[string]string, podSpec obj) obj {
	return obj{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": obj{"name": name, "namespace": "kube-system", "labels": labels},
		"spec": obj{
			"selector":       obj{"matchLabels": labels},
			"template":       obj{"metadata": obj{"labels": labels}, "spec": podSpec},
			"updateStrategy": obj{"type": "RollingUpdate", "rollingUpdate": obj{"maxUnavailable": 1}},
		},
	}
}

// applyBootstrapManifests creates the objects that do not exist yet, as
// Talos's ManifestApplyController does (manifest_apply.go: an existing
// object is left alone, `talosctl upgrade-k8s` updates them; a missing one
// is server-side applied with the field manager "talos"). It reports
// whether every object exists.
func applyBootstrapManifests(ctx context.Context, c *kubeClient, objs []bootstrapObject) bool {
	done := true

	for _, o := range objs {
		err := c.do(ctx, http.MethodGet, o.path, "", nil, nil)
		if err == nil {
			continue
		}

		if !isKubeStatus(err, http.StatusNotFound) {
			done = false

			continue
		}

		// Talos marks what it creates as its inventory's (manifest_apply.go:
		// ssa.InventoryAnnotationKey), which `talosctl upgrade-k8s` checks.
		body := deepCopy(o.body)
		fieldMap(body, "metadata", "annotations")[inventoryAnnotation] = inventoryName

		path := o.path + "?fieldManager=" + url.QueryEscape(constants.KubernetesFieldManagerName)
		if err := c.do(ctx, http.MethodPatch, path, "application/apply-patch+yaml", body, nil); err != nil {
			done = false
		}
	}

	return done
}
