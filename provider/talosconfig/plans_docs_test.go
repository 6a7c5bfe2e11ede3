// An external test package: provider/plan imports talosconfig, so only a
// talosconfig_test file can build real plans' inputs (plan.GenerateInput).
package talosconfig_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// Every node's configuration of plans of many shapes (Talos lines,
// control plane counts, pools with labels, taints, volumes and patches,
// cluster, worker and node patches, mirrors with credentials, inline
// manifests, with and without a VIP) is the same by documents as by whole
// texts, and the document path answers for each of them. The bundle is
// made and read back as provider/cluster's throwaway one is
// (NewCheckSecrets, MarshalSecrets, UnmarshalSecrets).
func TestMachineConfigsByDocumentsAreTheWholeTextOnes(t *testing.T) {
	t.Parallel()
	bundles := map[string]string{}
	for i, c := range []struct {
		talos string
		cps   int
		vip   bool
		extra bool
	}{
		{"v1.11.5", 1, false, false}, {"v1.11.5", 3, true, true},
		{"v1.12.5", 3, true, false}, {"v1.12.5", 1, false, true},
		{"", 3, true, true}, {"", 1, true, false},
	} {
		spec := plan.Spec{
			Name: "lab", TalosVersion: c.talos,
			Network: plan.Network{
				NIC:        plan.NIC{Subnet: "10.0.0.0/24", Gateway: "10.0.0.1", AddressRange: &plan.AddressRange{Start: "10.0.0.10", End: "10.0.0.250"}},
				DNSServers: []string{"10.0.0.1"},
			},
			ControlPlane: plan.ControlPlane{Count: &c.cps},
			WorkerPools:  []plan.WorkerPool{{Name: "workers", Count: 4}},
		}
		if c.vip {
			spec.VIP = "10.0.0.5"
		}
		if c.extra {
			spec.WorkerPools = append(spec.WorkerPools, plan.WorkerPool{
				Name: "storage", Count: 3, Labels: map[string]string{"role": "storage"},
				Taints:    []plan.Taint{{Key: "storage", Value: "true", Effect: "NoSchedule"}},
				DataDisks: []plan.DataDisk{{SizeGiB: 20, Volume: "data"}},
				Patches:   []string{"machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n"},
			})
			spec.Patches = []string{"machine:\n  time:\n    servers: [\"time.example.com\"]\n", "cluster:\n  proxy:\n    disabled: true\n"}
			spec.WorkerPatches = []string{"machine:\n  kubelet:\n    extraArgs:\n      max-pods: \"200\"\n"}
			spec.NodePatches = map[string][]string{"lab-workers-2": {"machine:\n  nodeLabels:\n    special: \"yes\"\n"}}
			spec.RegistryMirrors = map[string]plan.RegistryMirror{"docker.io": {
				Endpoints: []string{"https://mirror.example.com:5000"}, Auth: &plan.RegistryAuth{Username: "u", Password: "p4ss"},
			}}
			spec.InlineManifests = []plan.InlineManifest{{Name: "ns", Contents: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n"}}
		}
		facts := plan.Facts{Hosts: map[string]plan.HostFacts{}}
		for _, h := range []string{"pve1", "pve2"} {
			spec.Hosts = append(spec.Hosts, plan.Host{Node: h})
			facts.Hosts[h] = plan.HostFacts{Online: true, FreeMemoryMiB: 1 << 20, CPUs: 64}
		}
		p, err := plan.Compute(spec, facts, nil)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		secrets, ok := bundles[p.Cluster.TalosVersion]
		if !ok {
			b, err := talosconfig.NewCheckSecrets(p.Cluster.TalosVersion, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if secrets, err = talosconfig.MarshalSecrets(b); err != nil {
				t.Fatal(err)
			}
			bundles[p.Cluster.TalosVersion] = secrets
		}
		bundle, err := talosconfig.UnmarshalSecrets(secrets)
		if err != nil {
			t.Fatal(err)
		}
		for j := range p.Nodes {
			n := &p.Nodes[j]
			in, err := p.GenerateInput(n, bundle, "")
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("case %d (%s, %d control planes) node %s", i, p.Cluster.TalosVersion, c.cps, n.Name)
			byDocs, whole, err := talosconfig.GenerateBothWays(in)
			switch {
			case err != nil:
				t.Errorf("%s: %v", name, err)
			case byDocs == "":
				t.Errorf("%s: the document path did not answer", name)
			case byDocs != whole.Config:
				t.Errorf("%s: configurations differ:\n--- whole texts\n%s\n--- documents\n%s", name, whole.Config, byDocs)
			}
		}
	}
}
