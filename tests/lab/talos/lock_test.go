package talos

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// TestWantKubeLogsAfterTheLock: wantKube runs with sim.mu held and its node
// log lines wait until the reconciler releases it. Node.logf takes sim.mu,
// so logging inside hung the whole lab: every Talos API call then waited on
// sim.mu in apiFault. That happened to every cluster on a Kubernetes newer
// than the lab's kube-apiserver (the default v1.37.0 against v1.35.4).
// On a regression this test hangs until go test's -timeout, whose goroutine
// dump shows wantKube -> Node.logf -> sync.(*Mutex).Lock.
func TestWantKubeLogsAfterTheLock(t *testing.T) {
	t.Parallel()

	s, logs := newSim(t)
	addr := netip.MustParseAddr("127.0.0.1")

	cfg, err := configloader.NewFromBytes(configBytes(t, clusterInputK8s(t, addr, "1.37.0"), machine.TypeControlPlane))
	if err != nil {
		t.Fatal(err)
	}

	n := &Node{sim: s, machine: Machine{Name: "cp-1", VMID: 101}, addr: addr, active: cfg, etcdCluster: &etcdCluster{id: 7}}

	s.mu.Lock()
	c := s.clusterFor(cfg.Cluster().ID())
	// A control plane that never starts processes: only what wantKube
	// hands it matters here.
	c.kube = &kubeControlPlane{sim: s, id: c.id, tools: KubeTools{KubernetesVersion: "v1.35.4"}, want: make(chan kubeWant, 1), done: make(chan struct{})}
	c.agent = &kubeAgent{kick: make(chan struct{}, 1), done: make(chan struct{})}

	var after []func()

	s.wantKube(c, []*Node{n}, &after)
	s.mu.Unlock()

	if strings.Contains(logs.String(), "newer than") {
		t.Fatal("logged before sim.mu was released")
	}

	for _, f := range after {
		f()
	}

	if !strings.Contains(logs.String(), "the cluster runs Kubernetes v1.37.0, newer than the lab's kube-apiserver v1.35.4") {
		t.Fatalf("the version note was not logged:\n%s", logs.String())
	}

	if w := <-c.kube.want; !w.run || w.emulate != "" {
		t.Fatalf("want %+v: a running control plane serving the binary's own version", w)
	}
}
