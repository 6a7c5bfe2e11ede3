package talos

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const (
	talosCCM     = "https://raw.githubusercontent.com/siderolabs/talos-cloud-controller-manager/v1.12.0/docs/deploy/cloud-controller-manager.yml"
	csrApprover  = "https://raw.githubusercontent.com/alex1989hu/kubelet-serving-cert-approver/v0.11.0/deploy/standalone-install.yaml"
	kubeletImage = "        image: ghcr.io/siderolabs/kubelet:v1.35.2\n"
)

// externalKubelet sets kubelet cloud-provider: external and serving cert rotation.
func externalKubelet(s string) string {
	return replaceOnce(kubeletImage, kubeletImage+"        extraArgs:\n            cloud-provider: external\n            rotate-server-certificates: \"true\"\n")(s)
}

func withManifests(urls ...string) func(string) string {
	return func(s string) string {
		var b strings.Builder

		b.WriteString("    clusterName: lab\n")

		for _, u := range urls {
			if strings.Contains(u, "cloud-controller-manager") {
				b.WriteString("    externalCloudProvider:\n        enabled: true\n        manifests:\n            - " + u + "\n")
			} else {
				b.WriteString("    extraManifests:\n        - " + u + "\n")
			}
		}

		return replaceOnce("    clusterName: lab\n", b.String())(s)
	}
}

type csrList struct {
	Items []struct {
		Spec struct {
			SignerName string `json:"signerName"`
			Username   string `json:"username"`
		} `json:"spec"`
		Status struct {
			Conditions []struct {
				Type string `json:"type"`
			} `json:"conditions"`
			Certificate string `json:"certificate"`
		} `json:"status"`
	} `json:"items"`
}

func (tc *testCluster) csrs(t *testing.T) csrList {
	t.Helper()

	hc, server := kubeHTTP(t, tc.kubeconfig(t))

	resp, err := hc.Get(server + "/apis/certificates.k8s.io/v1/certificatesigningrequests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck

	var list csrList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}

	return list
}

func TestVIPAndCloudControllerManager(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 3, workers: 1, vip: true, patch: func(s string) string {
		return withManifests(talosCCM, csrApprover)(externalKubelet(s))
	}})

	ctx := ctxT(t)

	// The VIP is elected through etcd: nothing answers on it before
	// bootstrap, so the worker, whose trustd endpoint is the VIP, has no
	// Talos API yet.
	if _, err := secureClient(t, tc.tc, tc.endpoint).Version(ctx); err == nil {
		t.Fatal("the VIP must not answer before bootstrap")
	}

	if _, err := tc.client(t, tc.workers[0]).Version(ctx); err == nil {
		t.Fatal("the worker's apid must wait for trustd behind the VIP")
	}

	tc.bootstrap(t)

	if _, err := secureClient(t, tc.tc, tc.endpoint).Version(ctx); err != nil {
		t.Fatalf("Talos API on the VIP: %v", err)
	}

	waitFor(t, "worker apid", func() bool { _, err := tc.client(t, tc.workers[0]).Version(ctx); return err == nil })

	// The CCM initialises each node once it registered.
	var nodes []kubeNodeObj

	waitFor(t, "every node initialised by the CCM", func() bool {
		var err error
		nodes, err = tc.kubeNodes(t)

		for _, v := range tc.all() {
			n, ok := nodeByName(nodes, v.m.Name)
			if err != nil || !ok || n.Spec.ProviderID == "" || hasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized") {
				return false
			}
		}

		return true
	})

	for _, v := range tc.all() {
		n, ok := nodeByName(nodes, v.m.Name)
		if !ok {
			t.Fatalf("node %s not registered", v.m.Name)
		}

		if want := "talos://nocloud/" + v.addr().String(); n.Spec.ProviderID != want {
			t.Errorf("%s providerID = %q, want %q", v.m.Name, n.Spec.ProviderID, want)
		}

		if hasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized") {
			t.Errorf("%s still has the uninitialized taint", v.m.Name)
		}
	}

	// The kubelets' serving CSRs, approved by the approver, signed by
	// kube-controller-manager.
	var csrs csrList

	waitFor(t, "4 approved kubelet serving CSRs", func() bool {
		csrs = tc.csrs(t)
		if len(csrs.Items) != 4 {
			return false
		}

		for _, c := range csrs.Items {
			if c.Spec.SignerName != "kubernetes.io/kubelet-serving" || len(c.Status.Conditions) == 0 || c.Status.Conditions[0].Type != "Approved" || c.Status.Certificate == "" {
				return false
			}
		}

		return true
	})

	// The VIP holder goes away: another control plane takes the VIP.
	holder := tc.sim.vipHolder(tc.endpoint)
	if holder == nil {
		t.Fatal("no VIP holder")
	}

	holder.PowerOff()

	hc, server := kubeHTTP(t, tc.kubeconfig(t))

	waitFor(t, "VIP moved", func() bool {
		h := tc.sim.vipHolder(tc.endpoint)
		if h == nil || h == holder {
			return false
		}

		resp, err := hc.Get(server + "/readyz")
		if err != nil {
			return false
		}

		resp.Body.Close() //nolint:errcheck

		return resp.StatusCode == http.StatusOK
	})
}

func TestExternalCloudProviderWithoutCCM(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1, patch: externalKubelet})
	tc.bootstrap(t)

	nodes, err := tc.kubeNodes(t)
	if err != nil {
		t.Fatal(err)
	}

	n, _ := nodeByName(nodes, "cp1")
	if n.Spec.ProviderID != "" || !hasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized") {
		t.Fatalf("without a CCM: providerID %q, taints %v", n.Spec.ProviderID, n.Spec.Taints)
	}

	var csrs csrList

	waitFor(t, "the serving CSR", func() bool { csrs = tc.csrs(t); return len(csrs.Items) > 0 })

	if len(csrs.Items) != 1 || len(csrs.Items[0].Status.Conditions) != 0 {
		t.Fatalf("without an approver the serving CSR must stay Pending: %+v", csrs.Items)
	}
}
