package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

const templateVMID = 9000

// vmsProgram is the Pulumi YAML program of the lifecycle test: one VM that
// boots an ISO the node downloads (with cloud-init and the guest agent), and
// one VM cloned from a template.
var vmsProgram = template.Must(template.New("vms").Parse(`resources:
  iso:
    type: proxmoxtalos:proxmox:DownloadFile
    properties:
      node: pve1
      storage: local
      url: https://images.example.com/lablinux/qemu-guest-agent/lablinux-1.0.iso
      fileName: lablinux-1.0-agent.iso
  booted:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: booted
      tags: [demo, iso]
      iso: ${iso.volumeId}
      osType: l26
      cpu: { cores: 1 }
      memory: { dedicated: 1024 }
      scsiHardware: virtio-scsi-single
      disks:
        - { interface: scsi0, storage: local-lvm, size: 4, iothread: true }
      networkDevices:
        - { bridge: vmbr0 }
      cloudInit:
        storage: local-lvm
        ipConfigs:
          - ipv4: { address: {{.Address}}/24 }
      agent: { enabled: true, timeout: 60 }
  cloned:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: cloned
{{- if .CloneVMID}}
      vmId: {{.CloneVMID}}
{{- end}}
      clone: { vmId: {{.Template}} }
      cpu: { cores: {{.Cores}} }
      disks:
        - { interface: scsi0, storage: local-lvm, size: 3 }
outputs:
  bootedId: ${booted.vmId}
  bootedAddress: ${booted.ipv4Addresses[0]}
  clonedId: ${cloned.vmId}
`))

type vmsParams struct {
	Address   string
	Template  int
	Cores     int
	CloneVMID int
}

func render(t *testing.T, tpl *template.Template, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := tpl.Execute(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The issue-2 lifecycle with the real CLI, the way a user runs a YAML project.
func TestProxmoxYAMLLifecycle(t *testing.T) {
	t.Parallel()
	l := startProxmoxLab(t)
	l.makeVM(t, "pve1", templateVMID, "base-template", true)
	env := harness.NewEnv(t)
	params := vmsParams{Address: l.address(31), Template: templateVMID, Cores: 1}
	p := harness.NewYAMLProject(t, env, "vms", render(t, vmsProgram, params))
	p.ConfigureLab(t, l.conn)

	mustOK(t, "up", p.Up(t))
	out := func(k string) string { return p.MustRun(t, "stack", "output", k).Stdout }
	booted, cloned := atoi(t, out("bootedId")), atoi(t, out("clonedId"))
	if got := strings.TrimSpace(out("bootedAddress")); got != l.address(31) {
		t.Errorf("bootedAddress = %q, want %s (from the guest agent)", got, l.address(31))
	}
	vms := l.vmIDs()
	if len(vms) != 2 || vms[booted].Status != "running" || vms[cloned].Name != "cloned" {
		t.Fatalf("lab after up: %+v", vms)
	}
	mustOK(t, "second preview", p.Preview(t, "--expect-no-changes"))

	// update in place: more cores for the clone
	params.Cores = 2
	p.WriteProgram(t, "vms", render(t, vmsProgram, params))
	pr := mustOK(t, "preview cores", p.Preview(t, "--diff"))
	if !strings.Contains(pr.Stdout, "~ proxmoxtalos:proxmox:VirtualMachine: (update)") ||
		strings.Contains(pr.Stdout, "replace") || !strings.Contains(pr.Stdout, "cores") {
		t.Fatalf("the cores change is not an in-place update:\n%s", pr.Stdout)
	}
	mustOK(t, "up cores", p.Up(t))
	if cur, _, _ := l.VMConfig(cloned); cur["cores"] != "2" {
		t.Fatalf("cores in Proxmox: %q", cur["cores"])
	}
	if atoi(t, out("clonedId")) != cloned {
		t.Fatal("the VM was replaced by a cores change")
	}
	mustOK(t, "preview after update", p.Preview(t, "--expect-no-changes"))

	// refresh after an out-of-band change shows the drift, up repairs it
	if err := l.SetVMConfig(cloned, "cores", "4"); err != nil {
		t.Fatal(err)
	}
	mustOK(t, "refresh", p.Refresh(t))
	pr = p.Preview(t, "--diff", "--expect-no-changes")
	if pr.ExitCode == 0 || !strings.Contains(pr.Stdout, "cores") {
		t.Fatalf("the drift does not show after refresh:\n%s", pr)
	}
	mustOK(t, "up after drift", p.Up(t))
	if cur, _, _ := l.VMConfig(cloned); cur["cores"] != "2" {
		t.Fatalf("drift not repaired: cores %q", cur["cores"])
	}
	mustOK(t, "preview after repair", p.Preview(t, "--expect-no-changes"))

	// a replacement: a new explicit VMID
	params.CloneVMID = 950
	p.WriteProgram(t, "vms", render(t, vmsProgram, params))
	pr = mustOK(t, "preview replace", p.Preview(t, "--diff"))
	if !strings.Contains(pr.Stdout, "replace") {
		t.Fatalf("a new vmId does not replace:\n%s", pr.Stdout)
	}
	mustOK(t, "up replace", p.Up(t))
	vms = l.vmIDs()
	if _, old := vms[cloned]; old || vms[950].Name != "cloned" {
		t.Fatalf("after replace: %+v", vms)
	}

	// import a VM made outside the program; the code pulumi generates for it,
	// added to the program, shows no changes
	l.makeVM(t, "pve2", 960, "legacy", false)
	code := filepath.Join(t.TempDir(), "legacy.yaml")
	mustOK(t, "import", p.Import(t, "proxmoxtalos:proxmox:VirtualMachine", "legacy", "pve2/960",
		"--protect=false", "--out", code))
	if state := p.StackExport(t); !strings.Contains(state, `"pve2/960"`) {
		t.Fatal("the imported VM is not in the state")
	}
	generated, err := os.ReadFile(code)
	if err != nil {
		t.Fatal(err)
	}
	program := render(t, vmsProgram, params)
	resources, _ := strings.CutPrefix(strings.TrimSpace(string(generated)), "resources:")
	program = strings.Replace(program, "outputs:", strings.TrimLeft(resources, "\n")+"\noutputs:", 1)
	p.WriteProgram(t, "vms", program)
	if r := p.Preview(t, "--diff", "--expect-no-changes"); r.ExitCode != 0 {
		t.Fatalf("the generated code of the import shows changes:\n%s\n--- generated\n%s", r, generated)
	}

	l.destroyDeletesISO(t, "pve1", "lablinux-1.0-agent.iso", func() { mustOK(t, "destroy", p.Destroy(t)) })
	if vms := l.vmIDs(); len(vms) != 0 {
		t.Fatalf("destroy left VMs: %+v", vms)
	}
}

// 20 VMs in one up with --parallel 20: distinct VMIDs, none left after destroy.
func TestProxmoxYAMLTwentyVMsInParallel(t *testing.T) {
	t.Parallel()
	l := startProxmoxLab(t)
	env := harness.NewEnv(t)
	var b strings.Builder
	b.WriteString("resources:\n")
	for i := range 20 {
		fmt.Fprintf(&b, `  vm%02d:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve%d
      name: vm%02d
      memory: { dedicated: 256 }
      disks: [{ interface: scsi0, storage: local-lvm, size: 1 }]
      networkDevices: [{ bridge: vmbr0 }]
`, i, 1+i%3, i)
	}
	b.WriteString("outputs:\n")
	for i := range 20 {
		fmt.Fprintf(&b, "  id%02d: ${vm%02d.vmId}\n", i, i)
	}
	p := harness.NewYAMLProject(t, env, "twenty", b.String())
	p.ConfigureLab(t, l.conn)
	mustOK(t, "up", p.Up(t, "--parallel", "20"))
	seen := map[int]bool{}
	for i := range 20 {
		id := atoi(t, p.MustRun(t, "stack", "output", fmt.Sprintf("id%02d", i)).Stdout)
		if seen[id] {
			t.Errorf("VMID %d given twice", id)
		}
		seen[id] = true
	}
	if vms := l.vmIDs(); len(vms) != 20 {
		t.Fatalf("lab holds %d VMs, want 20", len(vms))
	}
	mustOK(t, "second preview", p.Preview(t, "--expect-no-changes"))
	mustOK(t, "destroy", p.Destroy(t, "--parallel", "20"))
	if vms := l.vmIDs(); len(vms) != 0 {
		t.Fatalf("destroy left VMs: %+v", vms)
	}
}

// Bad inputs fail at preview with a clear message, and nothing is created.
func TestProxmoxYAMLBadInputsFailAtPreview(t *testing.T) {
	t.Parallel()
	l := startProxmoxLab(t)
	l.makeVM(t, "pve1", 500, "taken", false)
	env := harness.NewEnv(t)
	cases := []struct{ name, props, want string }{
		{"unknown node", "node: pve9", `node "pve9" is not a node of this Proxmox VE cluster`},
		{"malformed disk interface", "node: pve1\n      disks: [{ interface: scsi99, storage: local-lvm, size: 1 }]", "disk interface \"scsi99\" is not valid"},
		{"memory 0", "node: pve1\n      memory: { dedicated: 0 }", "a VM needs at least 16 MiB"},
		{"duplicate vmId", "node: pve1\n      vmId: 500", "vmId 500 is already used by VM \"taken\""},
		{"missing bridge", "node: pve1\n      networkDevices: [{ bridge: vmbr5 }]", `bridge "vmbr5" does not exist on node pve1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := harness.NewYAMLProject(t, env, "bad-"+strings.ReplaceAll(c.name, " ", "-"),
				"resources:\n  vm:\n    type: proxmoxtalos:proxmox:VirtualMachine\n    properties:\n      "+c.props+"\n")
			p.ConfigureLab(t, l.conn)
			r := p.Preview(t)
			if r.ExitCode == 0 || !strings.Contains(r.Output(), c.want) {
				t.Fatalf("preview did not fail with %q:\n%s", c.want, r)
			}
			if r := p.Up(t); r.ExitCode == 0 {
				t.Fatalf("up succeeded:\n%s", r)
			}
		})
	}
	t.Cleanup(func() {
		if vms := l.vmIDs(); len(vms) != 1 {
			t.Errorf("bad inputs created VMs: %+v", vms)
		}
	})
}
