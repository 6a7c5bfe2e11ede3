package talos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"

	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// testCluster is a booted set of simulated nodes with their configs.
type testCluster struct {
	sim      *Sim
	logs     *testLog
	in       *generate.Input
	cps      []*vm
	workers  []*vm
	endpoint netip.Addr
	tc       *clientconfig.Config
	cpConfig []byte
	wConfig  []byte
}

type clusterOpts struct {
	cps, workers int
	vip          bool // endpoint is a VIP held by the control planes
	patch        func(string) string
	pull         func(ref string) error // Options.Pull
	version      string                 // Talos version the nodes boot (default testVersion)
}

// allVoting: every member has started (published its name) and votes; a
// real member joins as a learner and is promoted once it caught up.
func allVoting(members []*machine.EtcdMember) bool {
	for _, m := range members {
		if m.IsLearner || m.Hostname == "" {
			return false
		}
	}

	return true
}

// bootCluster boots VMs from the ISO, applies configs in maintenance mode,
// and waits until every node runs configured. It does not bootstrap.
func bootCluster(t *testing.T, o clusterOpts) *testCluster {
	t.Helper()

	s, logs := newSimWith(t, Options{Pull: o.pull})
	ip := addressBlock()

	tc := &testCluster{sim: s, logs: logs, endpoint: ip(11)}
	if o.vip {
		tc.endpoint = ip(10)
	}

	tc.in = clusterInput(t, tc.endpoint)
	tc.tc = adminTalosconfig(t, tc.in)

	patch := func(s string) string { return s }
	if o.patch != nil {
		patch = o.patch
	}

	vipPatch := func(s string) string {
		if !o.vip {
			return s
		}

		return s + "---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: " + tc.endpoint.String() + "\nlink: ens18\n"
	}

	tc.cpConfig = configBytes(t, tc.in, mtype.TypeControlPlane, patch, vipPatch)
	tc.wConfig = configBytes(t, tc.in, mtype.TypeWorker, patch)

	for i := range o.cps {
		tc.cps = append(tc.cps, newVM(fmt.Sprintf("cp%d", i+1), ip(11+i), "scsi0"))
	}

	for i := range o.workers {
		tc.workers = append(tc.workers, newVM(fmt.Sprintf("w%d", i+1), ip(21+i), "scsi0"))
	}

	ctx := ctxT(t)

	for _, v := range tc.all() {
		if o.version != "" {
			v.m.CDROM = strings.ReplaceAll(isoURL, testVersion, o.version)
		}

		v.start(s)
	}

	for _, v := range tc.all() {
		waitPhase(t, v.node, PhaseMaintenance)

		cfg := tc.wConfig
		if tc.isCP(v) {
			cfg = tc.cpConfig
		}

		if _, err := maintenanceClient(t, v.addr()).ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: cfg, Mode: machine.ApplyConfigurationRequest_AUTO}); err != nil {
			t.Fatal(err)
		}
	}

	for _, v := range tc.all() {
		waitFor(t, v.m.Name+" configured", func() bool { st := v.node.Status(); return st.Phase == PhaseRunning && st.Configured })
	}

	return tc
}

func (tc *testCluster) all() []*vm { return append(append([]*vm{}, tc.cps...), tc.workers...) }

func (tc *testCluster) isCP(v *vm) bool {
	for _, c := range tc.cps {
		if c == v {
			return true
		}
	}

	return false
}

// client talks to a node over mTLS with the admin talosconfig.
func (tc *testCluster) client(t *testing.T, v *vm) *client.Client {
	t.Helper()

	return secureClient(t, tc.tc, v.addr())
}

// bootstrap bootstraps the first control plane and waits for every control
// plane to be an etcd member and every node to be registered Ready.
func (tc *testCluster) bootstrap(t *testing.T) {
	t.Helper()

	ctx := ctxT(t)
	c := tc.client(t, tc.cps[0])

	waitFor(t, "apid on cp1", func() bool { _, err := c.Version(ctx); return err == nil })

	if err := c.Bootstrap(ctx, &machine.BootstrapRequest{}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "all control planes in etcd", func() bool {
		resp, err := c.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})

		return err == nil && len(resp.Messages[0].Members) == len(tc.cps) && allVoting(resp.Messages[0].Members)
	})

	waitFor(t, "all nodes Ready", func() bool {
		nodes, err := tc.kubeNodes(t)
		if err != nil || len(nodes) != len(tc.all()) {
			return false
		}

		for _, n := range nodes {
			if readyStatus(n) != "True" {
				return false
			}
		}

		return true
	})
}

// kubeconfig fetches the admin kubeconfig through the Kubeconfig API.
func (tc *testCluster) kubeconfig(t *testing.T) []byte {
	t.Helper()

	kc, err := tc.client(t, tc.runningCP()).Kubeconfig(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}

	return kc
}

// runningCP is the first control plane whose VM runs.
func (tc *testCluster) runningCP() *vm {
	for _, v := range tc.cps {
		if v.node.Status().Phase == PhaseRunning {
			return v
		}
	}

	return tc.cps[0]
}

// kubeHTTP builds an HTTP client from a kubeconfig, as kubectl would.
func kubeHTTP(t *testing.T, kc []byte) (*http.Client, string) {
	t.Helper()

	hc, server, err := kube.Client(kc)
	if err != nil {
		t.Fatal(err)
	}

	return hc, server
}

type kubeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

type kubeNodeObj struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		ProviderID    string      `json:"providerID"`
		Unschedulable bool        `json:"unschedulable"`
		Taints        []kubeTaint `json:"taints"`
	} `json:"spec"`
	Status struct {
		Conditions []kubeCondition   `json:"conditions"`
		Addresses  []kubeAddress     `json:"addresses"`
		NodeInfo   map[string]string `json:"nodeInfo"`
	} `json:"status"`
}

func readyStatus(n kubeNodeObj) string {
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status
		}
	}

	return ""
}

func (tc *testCluster) kubeNodes(t *testing.T) ([]kubeNodeObj, error) {
	t.Helper()

	kc, err := tc.client(t, tc.runningCP()).Kubeconfig(context.Background())
	if err != nil {
		return nil, err
	}

	hc, server := kubeHTTP(t, kc)

	resp, err := hc.Get(server + "/api/v1/nodes")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close() //nolint:errcheck

	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)

		return nil, fmt.Errorf("GET /api/v1/nodes: %s: %s", resp.Status, b)
	}

	var list struct {
		Items []kubeNodeObj `json:"items"`
	}

	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}

	return list.Items, nil
}

func hasTaint(n kubeNodeObj, key string) bool {
	for _, tt := range n.Spec.Taints {
		if tt.Key == key {
			return true
		}
	}

	return false
}

func nodeByName(nodes []kubeNodeObj, name string) (kubeNodeObj, bool) {
	for _, n := range nodes {
		if n.Metadata.Name == name {
			return n, true
		}
	}

	return kubeNodeObj{}, false
}

func replaceOnce(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic(fmt.Sprintf("patch target %q not in config", old))
		}

		return strings.Replace(s, old, new, 1)
	}
}
