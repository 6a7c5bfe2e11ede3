package e2e

import (
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// twoVMStack is a YAML program with two small VMs on pve1 that should run.
const twoVMStack = `resources:
  vm1:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties: {node: pve1, name: vm1, memory: {dedicated: 512}, disks: [{interface: scsi0, storage: local-lvm, size: 2}]}
  vm2:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties: {node: pve1, name: vm2, memory: {dedicated: 512}, disks: [{interface: scsi0, storage: local-lvm, size: 2}]}
`

// Passing faults on the way (a 500 on the connection check, a 500 on a
// start, a qmstart and a qmcreate task that failed for a passing cause) do
// not fail the run: preview and up succeed in one go with both VMs running.
// A start that cannot succeed is reported with Proxmox's reason and sent
// once, not retried.
func TestFaultsTransientAreRetried(t *testing.T) {
	t.Parallel()
	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{NoTalos: true})
	p := harness.NewYAMLProject(t, env, "retries", twoVMStack)
	p.ConfigureLab(t, labConfig)

	l.SetFaults(pve.Faults{Script: []pve.FaultRule{{Call: "GET /version"}}})
	if r := p.Preview(t); r.ExitCode != 0 {
		t.Fatalf("preview across one 500 on GET /version: %s", r)
	}
	l.SetFaults(pve.Faults{Script: []pve.FaultRule{
		{Call: "GET /version"},
		{Call: "POST /nodes/{node}/qemu/{vmid}/status/start"},
		{Task: "qmstart", Nth: 2},
		{Task: "qmcreate"},
	}})
	up := p.Up(t)
	if up.ExitCode != 0 {
		t.Fatalf("up across passing faults: %s", up)
	}
	if n := len(l.PVE.FaultStrikes()); n != 4 {
		t.Fatalf("%d of 4 faults struck: %+v", n, l.PVE.FaultStrikes())
	}
	if !strings.Contains(up.Output(), "retrying") {
		t.Errorf("the retries are not logged:\n%s", up.Output())
	}
	vms := l.VMs()
	if len(vms) != 2 || vms[0].Status != "running" || vms[1].Status != "running" {
		t.Fatalf("VMs after up: %+v", vms)
	}

	// a start that cannot succeed: the reason, once
	if r := p.Run(t, "destroy", "--yes"); r.ExitCode != 0 {
		t.Fatalf("destroy: %s", r)
	}
	l.SetFaults(pve.Faults{Script: []pve.FaultRule{{Task: "qmstart", Count: -1,
		Message: "start failed: QEMU exited with code 1"}}})
	up = p.Up(t)
	if up.ExitCode == 0 || !strings.Contains(up.Output(), "start failed: QEMU exited with code 1") {
		t.Fatalf("up whose starts cannot succeed: %s", up)
	}
	if n := l.PVE.Calls("POST /nodes/{node}/qemu/{vmid}/status/start"); n != 2 {
		t.Fatalf("%d start calls for 2 VMs: a start that cannot succeed was repeated", n)
	}
	requireAllKnown(t, l, p.StackExport(t), "after the failed starts")
}
