package e2e

import (
	"strings"
	"testing"
	"text/template"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// imageProgram is the disk-image flow as a user writes it: the node downloads
// the Image Factory's Talos nocloud disk image, a template is built from it,
// and VMs are cloned from the template (linked and full).
var imageProgram = template.Must(template.New("image").Parse(`resources:
  talos-disk:
    type: proxmoxtalos:proxmox:DownloadFile
    properties:
      node: pve1
      storage: local
      content: import
      url: https://factory.talos.dev/image/ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515/v1.12.5/nocloud-amd64.qcow2
      fileName: talos-v1.12.5-nocloud-amd64.qcow2
  talos-template:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: talos-template
      template: true
      osType: l26
      memory: { dedicated: 2048 }
      scsiHardware: virtio-scsi-single
      disks:
        - { interface: scsi0, storage: local-lvm, size: 8, iothread: true, importFrom: "${talos-disk.volumeId}" }
      networkDevices: [{ bridge: vmbr0 }]
      agent: { enabled: true }
  cp1:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: cp1
      clone: { vmId: "${talos-template.vmId}", full: false }
      cloudInit:
        storage: local-lvm
        ipConfigs: [{ ipv4: { address: {{.Address}}/24 } }]
      agent: { enabled: true, timeout: 120 }
  w1:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: w1
      clone: { vmId: "${talos-template.vmId}" }
      disks: [{ interface: scsi0, storage: local-lvm, size: {{.Size}} }]
      started: false
outputs:
  templateId: ${talos-template.vmId}
  cp1Id: ${cp1.vmId}
  cp1Address: ${cp1.ipv4Addresses[0]}
  w1Id: ${w1.vmId}
`))

// The disk-image flow with the real CLI against a lab whose VMs boot
// simulated Talos nodes.
func TestProxmoxYAMLDiskImageTemplate(t *testing.T) {
	t.Parallel()
	l, conn := harness.StartLab(t, lab.Options{})
	pl := &proxmoxLab{Lab: l}
	env := harness.NewEnv(t)
	params := struct {
		Address string
		Size    int
	}{pl.address(51), 12}
	p := harness.NewYAMLProject(t, env, "image", render(t, imageProgram, params))
	p.ConfigureLab(t, conn)

	mustOK(t, "up", p.Up(t))
	out := func(k string) string { return strings.TrimSpace(p.MustRun(t, "stack", "output", k).Stdout) }
	tmpl, cp1, w1 := atoi(t, out("templateId")), atoi(t, out("cp1Id")), atoi(t, out("w1Id"))
	if got := out("cp1Address"); got != params.Address {
		t.Errorf("cp1Address = %q, want %s: the linked clone did not boot Talos from the template's disk image", got, params.Address)
	}
	byID := map[int]bool{}
	for _, v := range l.VMs() {
		byID[v.VMID] = v.Template
	}
	if len(byID) != 3 || !byID[tmpl] || byID[cp1] || byID[w1] {
		t.Fatalf("lab after up: %+v (template %d)", l.VMs(), tmpl)
	}
	if cur, _, _ := l.VMConfig(tmpl); !strings.Contains(cur["scsi0"], "base-") || !strings.Contains(cur["scsi0"], "size=8G") {
		t.Errorf("template disk %q", cur["scsi0"])
	}
	if cur, _, _ := l.VMConfig(w1); !strings.Contains(cur["scsi0"], "size=12G") {
		t.Errorf("full clone's disk %q", cur["scsi0"])
	}
	mustOK(t, "second preview", p.Preview(t, "--expect-no-changes"))
	mustOK(t, "refresh", p.Refresh(t))
	mustOK(t, "preview after refresh", p.Preview(t, "--expect-no-changes"))

	// the full clone's disk grows in place
	params.Size = 16
	p.WriteProgram(t, "image", render(t, imageProgram, params))
	pr := mustOK(t, "preview growth", p.Preview(t, "--diff"))
	if strings.Contains(pr.Stdout, "replace") || !strings.Contains(pr.Stdout, "size") {
		t.Fatalf("the disk growth is not an in-place update:\n%s", pr.Stdout)
	}
	mustOK(t, "up growth", p.Up(t))
	if cur, _, _ := l.VMConfig(w1); !strings.Contains(cur["scsi0"], "size=16G") {
		t.Errorf("grown disk %q", cur["scsi0"])
	}

	mustOK(t, "destroy", p.Destroy(t))
	if vms := l.VMs(); len(vms) != 0 {
		t.Fatalf("destroy left VMs: %+v", vms)
	}
	for _, v := range l.PVE.Volumes("pve1", "local") {
		t.Errorf("destroy left %s", v.VolID)
	}
}

// A VM whose memory does not fit its node's free memory is a warning at
// preview, with the numbers, not an error.
func TestProxmoxYAMLMemoryWarning(t *testing.T) {
	t.Parallel()
	l := startProxmoxLab(t)
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "bigmem", `resources:
  big:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve2
      memory: { dedicated: 70000 }
      disks: [{ interface: scsi0, storage: local-lvm, size: 1 }]
`)
	p.ConfigureLab(t, l.conn)
	r := mustOK(t, "preview", p.Preview(t))
	for _, want := range []string{"warning", "the VM needs 70000 MiB but node pve2 has 63488 MiB free"} {
		if !strings.Contains(r.Output(), want) {
			t.Errorf("preview output lacks %q:\n%s", want, r)
		}
	}
	if vms := l.vmIDs(); len(vms) != 0 {
		t.Fatalf("preview created VMs: %+v", vms)
	}
}
