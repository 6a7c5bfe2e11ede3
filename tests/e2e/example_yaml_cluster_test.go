package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// examples/yaml-cluster, the project `make demo` runs (Makefile DEMO_EXAMPLE), works the
// way tests/demo runs it: the same stack config (the lab's endpoint, token and CA, the
// example's addressPrefix and factoryUrl), up builds 3 control planes (one per Proxmox
// node) and 2 workers, the nodes output matches the lab's VMs, every Kubernetes node is
// Ready with the providerID the Talos CCM sets, and destroy leaves the lab empty: no VM
// and nothing on any storage (ISOs, disks, cloud-init drives). In between, the real
// talosctl and kubectl show what `make demo` ends with (checkDemoTools).
func TestExampleYAMLCluster(t *testing.T) {
	t.Parallel()
	env := harness.NewEnv(t)
	l := startExampleLab(t)

	src, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "examples", "yaml-cluster", "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The example finds the provider in ../../bin; here it is the test's build.
	program := strings.Replace(string(src), "path: ../../bin", "path: "+env.ProviderDir, 1)
	if program == string(src) {
		t.Fatal("examples/yaml-cluster/Pulumi.yaml no longer points plugins.providers at ../../bin; update this test")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	p := harness.OpenYAMLProject(t, env, dir)
	p.ConfigureLab(t, l.Conn)
	prefix := l.AddressPrefix()
	p.SetConfig(t, "addressPrefix", prefix, false)
	p.SetConfig(t, "factoryUrl", l.FactoryURL(), false)

	if r := p.Up(t); r.ExitCode != 0 {
		t.Fatalf("up: %s", r)
	}

	var out struct {
		Endpoint    string   `json:"endpoint"`
		Nodes       []tcNode `json:"nodes"`
		Kubeconfig  string   `json:"kubeconfig"`
		Talosconfig string   `json:"talosconfig"`
	}
	r := p.MustRun(t, "stack", "output", "--json", "--show-secrets")
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("stack outputs: %v", err)
	}
	if want := "https://" + l.addr(5) + ":6443"; out.Endpoint != want {
		t.Errorf("endpoint output %q, want the VIP's %q", out.Endpoint, want)
	}

	// The nodes output: 3 control planes spread over pve1..pve3, 2 workers, each the VM
	// the lab holds under that name, on that host, with that VMID.
	vms := map[string]string{} // name -> "node/vmid"
	for _, vm := range l.VMs() {
		vms[vm.Name] = fmt.Sprintf("%s/%d", vm.Node, vm.VMID)
	}
	if len(vms) != 5 {
		t.Errorf("the lab holds %d VMs after up, want 5: %v", len(vms), vms)
	}
	roles := map[string]int{}
	var cpHosts, addresses []string
	for _, n := range out.Nodes {
		roles[n.Role]++
		if n.Role == "controlplane" {
			cpHosts = append(cpHosts, n.ProxmoxNode)
		}
		if got, want := vms[n.Name], fmt.Sprintf("%s/%d", n.ProxmoxNode, n.VMID); got != want {
			t.Errorf("nodes output says %s is VM %s; the lab has %q", n.Name, want, got)
		}
		if !strings.HasPrefix(n.Address, prefix+".") || n.MAC == "" {
			t.Errorf("node %s: address %q (want one in %s.0/24), MAC %q", n.Name, n.Address, prefix, n.MAC)
		}
		addresses = append(addresses, n.Address)
	}
	if roles["controlplane"] != 3 || roles["worker"] != 2 || len(out.Nodes) != 5 {
		t.Errorf("nodes output roles %v over %d nodes, want 3 controlplane + 2 worker", roles, len(out.Nodes))
	}
	slices.Sort(cpHosts)
	if !slices.Equal(cpHosts, []string{"pve1", "pve2", "pve3"}) {
		t.Errorf("control planes on %v, want one on each of pve1, pve2, pve3", cpHosts)
	}

	// kubectl get nodes through the kubeconfig output (the VIP): every node Ready, with the
	// providerID the Talos CCM sets on nocloud (talos://nocloud/<node IP>).
	knodes, err := kube.Nodes([]byte(out.Kubeconfig), "")
	if err != nil {
		t.Fatalf("listing Kubernetes nodes through the kubeconfig output: %v", err)
	}
	if len(knodes) != 5 {
		t.Errorf("Kubernetes lists %d nodes, want 5", len(knodes))
	}
	for _, n := range knodes {
		if !n.Ready || n.ProviderID != "talos://nocloud/"+n.InternalIP || !slices.Contains(addresses, n.InternalIP) {
			t.Errorf("Kubernetes node %s: ready=%v internalIP=%s providerID=%q; want Ready, one of the nodes output's "+
				"addresses, providerID talos://nocloud/<internal IP>", n.Name, n.Ready, n.InternalIP, n.ProviderID)
		}
	}

	checkDemoTools(t, out.Talosconfig, out.Kubeconfig, out.Nodes)

	if r := p.Destroy(t); r.ExitCode != 0 {
		t.Fatalf("destroy: %s", r)
	}
	l.requireEmpty(t)
}
