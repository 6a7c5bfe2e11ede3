package e2e

import (
	"fmt"
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

// agentStack is one VM booting an ISO whose guest runs the QEMU guest
// agent, so that a refresh asks the agent for its addresses.
func agentStack(prefix string) string {
	return fmt.Sprintf(`resources:
  iso:
    type: proxmoxtalos:proxmox:DownloadFile
    properties: {node: pve1, storage: local, url: "https://images.lab.example/lab-linux-agent.iso", fileName: lab-linux-agent.iso}
  vm1:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: vm1
      iso: ${iso.volumeId}
      memory: {dedicated: 512}
      agent: {enabled: true}
      disks: [{interface: scsi0, storage: local-lvm, size: 2}]
      networkDevices: [{bridge: vmbr0}]
      cloudInit: {storage: local-lvm, ipConfigs: [{ipv4: {address: "%[1]s.31/24", gateway: "%[1]s.1"}}]}
outputs:
  addresses: ${vm1.ipv4Addresses}
`, prefix)
}

// The other passing faults of issue 10 case 5: a refresh across 500s on
// the guest agent's interface read keeps the addresses, and a destroy
// across a 500 on the shutdown call, shutdown and destroy tasks that failed
// on a lock timeout, and a destroy whose answer was lost (it ran) ends
// with nothing left. Each reason is logged once.
func TestFaultsTransientOnRefreshAndDestroy(t *testing.T) {
	t.Parallel()
	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{Booter: pve.BasicBooter})
	p := harness.NewYAMLProject(t, env, "retries2", agentStack(l.AddressPrefix()))
	p.ConfigureLab(t, labConfig)
	if up := p.Up(t); up.ExitCode != 0 {
		t.Fatalf("up: %s", up)
	}
	addr := l.AddressPrefix() + ".31"

	agent := "GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"
	l.SetFaults(pve.Faults{Script: []pve.FaultRule{{Call: agent, Count: 2}}})
	r := p.Refresh(t)
	if r.ExitCode != 0 {
		t.Fatalf("refresh across two 500s on the agent read: %s", r)
	}
	if n := len(l.PVE.FaultStrikes()); n != 2 {
		t.Fatalf("%d of 2 agent faults struck: %+v", n, l.PVE.FaultStrikes())
	}
	if n := strings.Count(diagnostics(r.Output()), "retrying"); n != 1 {
		t.Errorf("the agent read's retry is logged %d times, want once:\n%s", n, r.Output())
	}
	if out := p.MustRun(t, "stack", "output", "addresses", "--json"); !strings.Contains(out.Stdout, `"`+addr+`"`) {
		t.Fatalf("the refresh lost the guest's address %s: %s", addr, out.Stdout)
	}

	l.SetFaults(pve.Faults{Script: []pve.FaultRule{
		{Call: "POST /nodes/{node}/qemu/{vmid}/status/shutdown"},
		{Task: "qmshutdown"},
		{Task: "qmdestroy"},
		{Call: "DELETE /nodes/{node}/qemu/{vmid}", Nth: 2, Lost: true},
	}})
	d := p.Destroy(t)
	if d.ExitCode != 0 {
		t.Fatalf("destroy across passing faults: %s", d)
	}
	if n := len(l.PVE.FaultStrikes()); n != 4 {
		t.Fatalf("%d of 4 destroy faults struck: %+v", n, l.PVE.FaultStrikes())
	}
	if vms, isos := labVMIDs(l), labISOs(l); len(vms)+len(isos) > 0 {
		t.Fatalf("destroy left VMs %v and ISOs %v", vms, isos)
	}
	// one line per reason: the shutdown's 500 and its task that failed on
	// the lock, the destroy's task that failed on the lock and its lost
	// answer; none twice
	diag := diagnostics(d.Output())
	if strings.Count(diag, "retrying") != 4 || !strings.Contains(diag, "got timeout") || repeatsLine(diag) {
		t.Errorf("the destroy's retries are not logged once per reason:\n%s", d.Output())
	}
}

// repeatsLine reports whether a non-empty line occurs twice in text.
func repeatsLine(text string) bool {
	seen := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && seen[l] {
			return true
		}
		seen[l] = true
	}
	return false
}

// diagnostics is the Diagnostics section of a CLI run's output: each
// message once (the progress lines repeat them).
func diagnostics(out string) string {
	_, diag, _ := strings.Cut(out, "Diagnostics:")
	diag, _, _ = strings.Cut(diag, "Resources:")
	return diag
}
