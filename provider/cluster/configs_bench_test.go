package cluster

import (
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// BenchmarkMachineConfigs60 generates the configurations of the bench's
// 60-node cluster (3 control planes, 57 workers on 5 hosts) once, as a
// no-op preview of an existing cluster does: each iteration with a new
// bundle, so that no process-wide memo answers from an earlier one.
func BenchmarkMachineConfigs60(b *testing.B) {
	spec := plan.Spec{
		Name: "bench", KubernetesVersion: "v1.35.4",
		Network: plan.Network{
			NIC:        plan.NIC{Subnet: "10.0.0.0/24", Gateway: "10.0.0.1", AddressRange: &plan.AddressRange{Start: "10.0.0.10", End: "10.0.0.250"}},
			DNSServers: []string{"10.0.0.1"},
		},
		VIP:          "10.0.0.5",
		ControlPlane: plan.ControlPlane{Count: ptrTo(3)},
		WorkerPools:  []plan.WorkerPool{{Name: "workers", Count: 57}},
	}
	facts := plan.Facts{Hosts: map[string]plan.HostFacts{}}
	for _, h := range []string{"pve1", "pve2", "pve3", "pve4", "pve5"} {
		spec.Hosts = append(spec.Hosts, plan.Host{Node: h})
		facts.Hosts[h] = plan.HostFacts{Online: true, FreeMemoryMiB: 1 << 20, CPUs: 64}
	}
	p, err := plan.Compute(spec, facts, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		bundle, err := talosconfig.NewCheckSecrets(p.Cluster.TalosVersion, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		secrets, err := talosconfig.MarshalSecrets(bundle)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := machineConfigs(p, secrets); err != nil {
			b.Fatal(err)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
