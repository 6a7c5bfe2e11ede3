package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// A cluster created on Talos 1.12 reaches the newest release by changing
// talosVersion only, one minor per `up` (1.12 -> 1.13 -> 1.14), and then
// Kubernetes to the newest 1.14 runs, one minor per `up` (1.35 -> 1.36 ->
// 1.37): every node runs each version afterwards, the VMs stay, etcd never
// loses quorum and no kubelet is ever newer than an API server. A move back
// to 1.13 fails the preview, naming the release to keep. The bootstrap
// workloads stay as Talos 1.12 created them through the Talos upgrades and
// move with the first Kubernetes upgrade's manifest sync: kube-proxy to the
// new Kubernetes version, CoreDNS and flannel to Talos 1.14's.
func TestClusterUpgradesAcrossMinors(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	prog := l.program(3, 1)
	prog.TalosVersion, prog.KubernetesVersion = "v1.12.7", "v1.35.4"
	p := harness.NewYAMLProject(t, env, "minors", prog.render(t))
	p.ConfigureLab(t, l.conn)

	tcTimed(t, "create on 1.12", func() harness.Result { return p.Up(t) })
	out := tcReadOutputs(t, p)
	ids := tcVMIDs(out.Nodes)
	if len(ids) != 4 {
		t.Fatalf("nodes %+v, want 3 control planes and 1 worker", out.Nodes)
	}
	assertReportedVersions(t, []byte(out.Kubeconfig), "v1.35.4", 3)

	// A skipped minor and a release the provider does not know fail the
	// preview, naming the version to take.
	for _, bad := range []struct{ version, want string }{
		{"v1.14.1", "set talosVersion to v1.13.9 first"},
		{"v1.15.0", "v1.14.1"},
	} {
		prog.TalosVersion = bad.version
		p.WriteProgram(t, "minors", prog.render(t))
		if r := p.Preview(t); r.ExitCode == 0 || !strings.Contains(r.Output(), bad.want) {
			t.Errorf("Talos v1.12.7 -> %s: preview exit %d, want a failure saying %q:\n%s", bad.version, r.ExitCode, bad.want, r.Output())
		}
	}

	for _, step := range []struct{ from, to string }{{"v1.12.7", "v1.13.9"}, {"v1.13.9", "v1.14.1"}} {
		prog.TalosVersion = step.to
		p.WriteProgram(t, "minors", prog.render(t))
		pre := tcTimed(t, "preview Talos "+step.to, func() harness.Result { return p.Preview(t) })
		if want := "all 4 nodes upgraded one at a time, control planes first (Talos " + step.from + " → " + step.to + "; VMs kept)"; !strings.Contains(pre.Output(), want) {
			t.Errorf("Talos %s preview does not say %q:\n%s", step.to, want, pre.Output())
		}
		tcTimed(t, "Talos "+step.to, func() harness.Result { return p.Up(t) })
		out = tcReadOutputs(t, p)
		for _, n := range out.Nodes {
			sn := l.Talos().Node(netip.MustParseAddr(n.Address))
			if sn == nil {
				t.Errorf("%s (%s) does not run after the upgrade to %s", n.Name, n.Address, step.to)
				continue
			}
			if v := sn.Status().Image.Version; v != step.to {
				t.Errorf("%s runs Talos %s after the upgrade to %s", n.Name, v, step.to)
			}
		}
		if !maps.Equal(tcVMIDs(out.Nodes), ids) {
			t.Errorf("VMIDs changed in the upgrade to %s: %v -> %v", step.to, ids, tcVMIDs(out.Nodes))
		}
		tcTimed(t, "preview after Talos "+step.to, func() harness.Result { return p.Preview(t, "--expect-no-changes") })
	}

	// Back one minor: refused at preview, naming the release to keep.
	prog.TalosVersion = "v1.13.9"
	p.WriteProgram(t, "minors", prog.render(t))
	if r := p.Preview(t); r.ExitCode == 0 || !strings.Contains(r.Output(), "Talos v1.14.1 to v1.13.9 is a downgrade") ||
		!strings.Contains(r.Output(), "keep talosVersion on Talos 1.14: v1.14.1") {
		t.Errorf("a downgrade to 1.13: preview exit %d, want a failure naming v1.14.1:\n%s", r.ExitCode, r.Output())
	}
	prog.TalosVersion = "v1.14.1"

	// A Talos upgrade alone leaves the bootstrap workloads as Talos 1.12
	// created them (DefaultCoreDNSVersion v1.13.2, FlannelVersion v0.27.4 at
	// v1.12.7): Talos only creates them, as it does on a real cluster.
	assertImages(t, "after the Talos upgrades", []byte(out.Kubeconfig), map[string]string{
		"daemonsets/kube-proxy":   "registry.k8s.io/kube-proxy:v1.35.4",
		"deployments/coredns":     "registry.k8s.io/coredns/coredns:v1.13.2",
		"daemonsets/kube-flannel": "ghcr.io/siderolabs/flannel:v0.27.4",
	})

	for _, k8s := range []string{"v1.36.3", "v1.37.0"} {
		prog.KubernetesVersion = k8s
		p.WriteProgram(t, "minors", prog.render(t))
		tcTimed(t, "Kubernetes "+k8s, func() harness.Result { return p.Up(t) })
		out = tcReadOutputs(t, p)
		knodes, err := kube.Nodes([]byte(out.Kubeconfig), "")
		if err != nil {
			t.Fatalf("Kubernetes API after the upgrade to %s: %v", k8s, err)
		}
		if len(knodes) != 4 {
			t.Errorf("Kubernetes nodes after the upgrade to %s: %+v", k8s, knodes)
		}
		for _, n := range knodes {
			if n.Version != k8s || !n.Ready {
				t.Errorf("node %s: kubelet %s ready=%v after the upgrade to %s", n.Name, n.Version, n.Ready, k8s)
			}
		}
		// As talosctl upgrade-k8s, the up synced the bootstrap manifests,
		// which Talos only creates: kube-proxy runs the new version, CoreDNS
		// and flannel the versions Talos 1.14 deploys (pkg/machinery/constants
		// at v1.14.1: DefaultCoreDNSVersion v1.14.7, FlannelVersion 0.28.9),
		// no longer those of 1.12, which created them.
		assertImages(t, "after the upgrade to "+k8s, []byte(out.Kubeconfig), map[string]string{
			"daemonsets/kube-proxy":   "registry.k8s.io/kube-proxy:" + k8s,
			"deployments/coredns":     "registry.k8s.io/coredns/coredns:v1.14.7",
			"daemonsets/kube-flannel": "ghcr.io/siderolabs/flannel:v0.28.9",
		})
		if !maps.Equal(tcVMIDs(out.Nodes), ids) {
			t.Errorf("VMIDs changed in the Kubernetes upgrade to %s: %v -> %v", k8s, ids, tcVMIDs(out.Nodes))
		}
		assertReportedVersions(t, []byte(out.Kubeconfig), k8s, 3)
	}
	if want := "4 nodes (3 control planes, 1 worker), Talos v1.14.1, Kubernetes v1.37.0"; out.Summary != want {
		t.Errorf("summary %q, want %q", out.Summary, want)
	}
	tcTimed(t, "preview at the end", func() harness.Result { return p.Preview(t, "--expect-no-changes") })

	if q := l.Talos().QuorumLosses(); len(q) > 0 {
		t.Errorf("etcd lost quorum %d times, first: %s", len(q), q[0])
	}
	if v := l.Talos().SkewViolations(); len(v) > 0 {
		t.Errorf("the upgrades broke the Kubernetes version skew policy %d times, first: %s", len(v), v[0])
	}
}

// assertImages checks the first container image of kube-system workloads
// ("daemonsets/kube-proxy") in the cluster's kube-apiserver, as `kubectl -n
// kube-system get ds kube-proxy -o wide` shows it.
func assertImages(t *testing.T, when string, kubeconfig []byte, want map[string]string) {
	t.Helper()
	for _, w := range slices.Sorted(maps.Keys(want)) {
		img, err := workloadImage(kubeconfig, w)
		if err != nil {
			t.Errorf("%s %s: %v", w, when, err)
		} else if img != want[w] {
			t.Errorf("%s runs %s %s, want %s", w, img, when, want[w])
		}
	}
}

// workloadImage reads the image of a kube-system workload's first
// container.
func workloadImage(kubeconfig []byte, workload string) (string, error) {
	client, server, err := kube.Client(kubeconfig)
	if err != nil {
		return "", err
	}
	resp, err := client.Get(strings.TrimSuffix(server, "/") + "/apis/apps/v1/namespaces/kube-system/" + workload)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	var w struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct{ Name, Image string } `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return "", err
	}
	if len(w.Spec.Template.Spec.Containers) == 0 {
		return "", fmt.Errorf("no container in %s", body)
	}
	return w.Spec.Template.Spec.Containers[0].Image, nil
}

// labAPIServer is the one kube-apiserver the lab builds (tools/kube,
// `make kube-tools`): whatever Kubernetes version a cluster runs, /version
// reports it (tests/lab/talos/README.md, "Versions").
const labAPIServer = "v1.35.4"

// assertReportedVersions checks what the lab reports for a cluster on
// Kubernetes k8s, as docs/lab.md lists it: every Node's kubeletVersion and
// every control plane's kube-apiserver mirror pod image are the cluster's
// version; the API server's /version is the lab's binary, which emulates
// an older minor it can (--emulated-version: emulationMinor in /version)
// and serves a newer one as its own (emulationMinor its own).
func assertReportedVersions(t *testing.T, kubeconfig []byte, k8s string, controlPlanes int) {
	t.Helper()
	client, server, err := kube.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, v any) {
		t.Helper()
		resp, err := client.Get(strings.TrimSuffix(server, "/") + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatal(err)
		}
	}

	var ver struct {
		GitVersion     string `json:"gitVersion"`
		EmulationMinor string `json:"emulationMinor"`
	}
	get("/version", &ver)
	// kube-apiserver 1.35 always reports the minor it emulates, its own
	// when it emulates none (a cluster on its minor or a newer one).
	if ver.GitVersion != labAPIServer || ver.EmulationMinor != "35" {
		t.Errorf("Kubernetes %s: /version says %s (emulation minor %q), want the lab's %s, emulating its own minor 35",
			k8s, ver.GitVersion, ver.EmulationMinor, labAPIServer)
	}

	var nodes struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Status   struct {
				NodeInfo struct {
					KubeletVersion string `json:"kubeletVersion"`
				} `json:"nodeInfo"`
			} `json:"status"`
		} `json:"items"`
	}
	get("/api/v1/nodes", &nodes)
	for _, n := range nodes.Items {
		if n.Status.NodeInfo.KubeletVersion != k8s {
			t.Errorf("Kubernetes %s: node %s reports kubelet %s", k8s, n.Metadata.Name, n.Status.NodeInfo.KubeletVersion)
		}
	}

	var pods struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Spec     struct {
				Containers []struct{ Image string } `json:"containers"`
			} `json:"spec"`
		} `json:"items"`
	}
	get("/api/v1/namespaces/kube-system/pods", &pods)
	seen := 0
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Metadata.Name, "kube-apiserver-") {
			continue
		}
		seen++
		if len(p.Spec.Containers) == 0 || p.Spec.Containers[0].Image != "registry.k8s.io/kube-apiserver:"+k8s {
			t.Errorf("Kubernetes %s: mirror pod %s runs %+v", k8s, p.Metadata.Name, p.Spec.Containers)
		}
	}
	if seen != controlPlanes {
		t.Errorf("Kubernetes %s: %d kube-apiserver mirror pods, want one per control plane (%d)", k8s, seen, controlPlanes)
	}
}
