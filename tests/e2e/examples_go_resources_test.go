package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"

	"github.com/proxmoxtalos/proxmoxtalos/examples/go-resources/cluster"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// exampleClusterConfig is the stack configuration the examples read, for a lab: three
// control planes and one worker in the lab's address block, the VIP beside them.
func exampleClusterConfig(l *exampleLab, project string) auto.ConfigMap {
	cfg := labConfig(l.Conn)
	set := func(k, v string) { cfg[project+":"+k] = auto.ConfigValue{Value: v} }
	set("clusterName", "demo")
	set("hosts", `["pve1","pve2","pve3"]`)
	set("subnet", l.addr(0)+"/24")
	set("gateway", l.addr(1))
	set("vip", l.addr(10))
	return cfg
}

// The low-level example (examples/go-resources), its Program run inline through the Go
// Automation API against the lab: up builds three control planes and a worker behind the
// VIP with the CCM, a second preview changes nothing, destroy empties the lab.
func TestExampleGoResources(t *testing.T) {
	t.Parallel()
	start := time.Now()
	l := startExampleLab(t)
	env := harness.NewEnv(t)
	const project = "proxmoxtalos-go-resources"
	stack := harness.InlineStack(t, env, project, cluster.Program, nil)
	cfg := exampleClusterConfig(l, project)
	cfg[project+":controlPlaneAddresses"] = auto.ConfigValue{Value: fmt.Sprintf(`[%q,%q,%q]`, l.addr(11), l.addr(12), l.addr(13))}
	cfg[project+":workerAddresses"] = auto.ConfigValue{Value: fmt.Sprintf(`[%q]`, l.addr(21))}
	ctx := context.Background()

	// A configuration the program refuses fails the preview with what to fix, and nothing
	// reaches the lab.
	bad := auto.ConfigMap{}
	for k, v := range cfg {
		bad[k] = v
	}
	bad[project+":controlPlaneAddresses"] = auto.ConfigValue{Value: fmt.Sprintf(`[%q,%q]`, l.addr(11), l.addr(12))}
	if err := stack.SetAllConfig(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if _, err := stack.Preview(ctx); err == nil || !strings.Contains(err.Error(), "lists 2 control planes: use an odd number") {
		t.Errorf("preview with 2 control planes: %v, want the program's error asking for an odd number", err)
	}
	if vms := l.VMs(); len(vms) != 0 {
		t.Errorf("a refused preview left VMs in the lab: %v", vms)
	}

	if err := stack.SetAllConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	up, err := stack.Up(ctx, optup.ProgressStreams(testWriter{t}))
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("up took %s", time.Since(start).Round(time.Millisecond))
	checkClusterOutputs(t, l, up.Outputs, 4)
	// The health gate's view of the same nodes, exported by this example.
	if k8s, _ := up.Outputs["kubernetesNodes"].Value.(map[string]any); len(k8s) != 4 {
		t.Errorf("kubernetesNodes output = %v, want the 4 nodes", k8s)
	}

	checkUnchangedThenDestroy(t, l, stack)
	t.Logf("TestExampleGoResources took %s", time.Since(start).Round(time.Millisecond))
}

// checkClusterOutputs checks what every example exports after up against the lab: secret
// kubeconfig and talosconfig pointing at the VIP and the control planes, one running VM
// per node, and, through the kubeconfig, every node Ready with a providerID (the CCM ran).
func checkClusterOutputs(t *testing.T, l *exampleLab, outputs auto.OutputMap, wantNodes int) {
	t.Helper()
	vip := "https://" + l.addr(10) + ":6443"
	kubeconfig := outputs["kubeconfig"]
	if s, _ := kubeconfig.Value.(string); !kubeconfig.Secret || !strings.Contains(s, "server: "+vip) {
		t.Errorf("kubeconfig output: secret=%v, want a secret kubeconfig with server %s", kubeconfig.Secret, vip)
	}
	talosconfig := outputs["talosconfig"]
	if s, _ := talosconfig.Value.(string); !talosconfig.Secret || !strings.Contains(s, l.addr(11)) || strings.Contains(s, l.addr(10)) {
		t.Errorf("talosconfig output: secret=%v, want a secret talosconfig with the control planes' own addresses as endpoints, never the VIP", talosconfig.Secret)
	}
	if s, _ := talosconfig.Value.(string); s != "" {
		checkTalosctlWithoutNodes(t, s, l.addr(11))
	}
	if got := outputs["endpoint"].Value; got != vip {
		t.Errorf("endpoint output = %v, want %s", got, vip)
	}

	checkNodesOutput(t, outputs["nodes"], wantNodes)

	var running []string
	for _, vm := range l.VMs() {
		if vm.Status == "running" {
			running = append(running, vm.Name)
		}
	}
	sort.Strings(running)
	if len(running) != wantNodes {
		t.Errorf("running VMs in the lab: %v, want %d", running, wantNodes)
	}

	kubeconfigText, _ := kubeconfig.Value.(string)
	nodes, err := kube.Nodes([]byte(kubeconfigText), "")
	if err != nil {
		t.Errorf("listing Kubernetes nodes with the kubeconfig output: %v", err)
		return
	}
	if len(nodes) != wantNodes {
		t.Errorf("the Kubernetes API lists %d nodes (%v), want %d", len(nodes), nodes, wantNodes)
	}
	for _, n := range nodes {
		if !n.Ready {
			t.Errorf("Kubernetes node %s is not Ready", n.Name)
		}
		if n.ProviderID == "" {
			t.Errorf("Kubernetes node %s has no providerID: the cloud controller manager did not initialise it", n.Name)
		}
	}
}

// opCounts turns a preview's change summary into plain counts.
func opCounts[K ~string](m map[K]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

// checkNodesOutput checks that the example exports its nodes as a list of objects (not
// text), each naming the node, its role, its address and its VM.
func checkNodesOutput(t *testing.T, nodes auto.OutputValue, wantNodes int) {
	t.Helper()
	list, ok := nodes.Value.([]any)
	if !ok || len(list) != wantNodes {
		t.Errorf("nodes output = %#v, want a list of %d node objects", nodes.Value, wantNodes)
		return
	}
	for i, item := range list {
		n, _ := item.(map[string]any)
		name, _ := n["name"].(string)
		role, _ := n["role"].(string)
		address, _ := n["address"].(string)
		vmID, _ := n["vmId"].(float64)
		if name == "" || (role != "controlplane" && role != "worker") || address == "" || vmID < 100 {
			t.Errorf("nodes[%d] = %v: want name, role (controlplane or worker), address and vmId", i, item)
		}
		// Issue 15: the same shape in every language, the schema's camelCase keys (a
		// Python program exports them through node_output, examples/python).
		for k := range n {
			if !slices.Contains([]string{"name", "role", "pool", "proxmoxNode", "vmId", "address", "macAddress"}, k) {
				t.Errorf("nodes[%d] has key %q: want the schema's camelCase keys only", i, k)
			}
		}
		if _, ok := n["proxmoxNode"]; !ok {
			t.Errorf("nodes[%d] = %v lacks proxmoxNode", i, item)
		}
		if _, ok := n["macAddress"]; !ok {
			t.Errorf("nodes[%d] = %v lacks macAddress", i, item)
		}
	}
}
