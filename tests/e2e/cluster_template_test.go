package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// The cluster cloned from a template VM built from the Image Factory's
// nocloud disk image (instead of booting the ISO), with a worker pool that
// has a data disk holding a Talos user volume, and a second NIC on every
// node. The template is a resource of the same program: it has a fixed
// VMID, since the component's inputs are plain values, and the component
// depends on it, so the clones start once it exists.
var tcTemplateProgram = template.Must(template.New("template").Parse(`resources:
  talos-disk:
    type: proxmoxtalos:proxmox:DownloadFile
    properties:
      node: pve1
      storage: local
      content: import
      url: {{.FactoryURL}}/image/ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515/v1.12.5/nocloud-amd64.qcow2
      fileName: talos-v1.12.5-nocloud-amd64.qcow2
  talos-template:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      vmId: 9001
      name: talos-template
      template: true
      osType: l26
      scsiHardware: virtio-scsi-single
      disks:
        - { interface: scsi0, storage: local-lvm, size: 8, importFrom: "${talos-disk.volumeId}" }
      networkDevices: [{ bridge: vmbr0 }]
      agent: { enabled: true }
  cluster:
    type: proxmoxtalos:TalosCluster
    options:
      dependsOn: ["${talos-template}"]
    properties:
      clusterName: tmpl
      talosVersion: v1.12.5
      kubernetesVersion: v1.34.1
      image:
        factoryUrl: {{.FactoryURL}}
        template: { vmId: 9001 }
      hosts: [{ node: pve1 }]
      network:
        subnet: {{.Subnet}}
        gateway: {{.Gateway}}
        addressRange: { start: {{.Start}}, end: {{.End}} }
        secondary:
          bridge: vmbr1
          vlan: 20
          subnet: 10.20.0.0/24
          addressRange: { start: 10.20.0.10, end: 10.20.0.40 }
      controlPlane: { count: 1 }
      workerPools:
        - name: db
          count: 1
          dataDisks: [{ size: 30, volume: data }]
outputs:
  nodes: ${cluster.nodes}
  summary: ${cluster.summary}
  endpoint: ${cluster.endpoint}
  kubeconfig: ${cluster.kubeconfig}
  talosconfig: ${cluster.talosconfig}
`))

func TestClusterFromTemplateWithDataDiskAndSecondNIC(t *testing.T) {
	t.Parallel()
	l := startTCLabWith(t, lab.Options{Nodes: []pve.NodeSpec{{Name: "pve1", Bridges: []string{"vmbr0", "vmbr1"}}}})
	env := harness.NewEnv(t)
	prog := l.program(1, 1)
	p := harness.NewYAMLProject(t, env, "tmpl", render(t, tcTemplateProgram, prog))
	p.ConfigureLab(t, l.conn)

	up := tcTimed(t, "create from the template", func() harness.Result { return p.Up(t) })
	out := tcReadOutputs(t, p)
	tcAssertSummary(t, "create from the template", up, out, "tmpl", "2 added: tmpl-cp-1, tmpl-db-1; new cluster: all nodes configured at once, etcd bootstrapped on tmpl-cp-1, one health check at the end", "2 nodes (1 control plane, 1 worker), Talos v1.12.5, Kubernetes v1.34.1")
	if len(out.Nodes) != 2 {
		t.Fatalf("nodes %+v", out.Nodes)
	}
	cp, worker := out.Nodes[0], out.Nodes[1]

	// Cloned from the template, no ISO: every node's VM came from a clone
	// task of VM 9001 and has no CD-ROM with an ISO; the hosts downloaded
	// only the disk image.
	var clones []string
	for _, task := range l.PVE.Tasks() {
		for _, line := range task.Log {
			if m := regexp.MustCompile(`creating a clone of VM 9001 with ID (\d+)`).FindStringSubmatch(line); m != nil {
				clones = append(clones, m[1])
			}
		}
	}
	for _, n := range out.Nodes {
		if !slices.Contains(clones, fmt.Sprint(n.VMID)) {
			t.Errorf("%s (VM %d) was not cloned from template 9001 (clones: %v)", n.Name, n.VMID, clones)
		}
		cfg, _, _ := l.VMConfig(n.VMID)
		for k, v := range cfg {
			if strings.Contains(v, "iso/") {
				t.Errorf("%s: %s=%s: a cloned node boots no ISO", n.Name, k, v)
			}
		}
	}
	for _, v := range l.PVE.Volumes("pve1", "local") {
		if strings.HasSuffix(v.VolID, ".iso") {
			t.Errorf("the cluster downloaded an ISO (%s) although it clones a template", v.VolID)
		}
	}

	// The worker's data disk, and the second NIC with its own address on
	// every node.
	wcfg, _, _ := l.VMConfig(worker.VMID)
	if !strings.Contains(wcfg["scsi1"], "size=30G") {
		t.Errorf("worker data disk scsi1=%q, want 30G", wcfg["scsi1"])
	}
	second := map[string]bool{}
	for _, n := range out.Nodes {
		cfg, _, _ := l.VMConfig(n.VMID)
		if !strings.Contains(cfg["net1"], "bridge=vmbr1") || !strings.Contains(cfg["net1"], "tag=20") {
			t.Errorf("%s net1=%q, want vmbr1 with VLAN 20", n.Name, cfg["net1"])
		}
		ci := l.PVE.CloudInit(n.VMID)
		if ci == nil {
			t.Fatalf("%s has no cloud-init drive", n.Name)
		}
		a, err := netip.ParsePrefix(ci.IPConfigs["net1"].IP)
		if err != nil || !netip.MustParsePrefix("10.20.0.0/24").Contains(a.Addr()) || second[a.Addr().String()] {
			t.Errorf("%s ipconfig1 %q: want its own address in 10.20.0.0/24", n.Name, ci.IPConfigs["net1"].IP)
		}
		second[a.Addr().String()] = true
		if got := ci.IPConfigs["net0"].IP; got != n.Address+"/24" {
			t.Errorf("%s ipconfig0 %q, want %s/24", n.Name, got, n.Address)
		}
	}

	// The worker runs the user volume on its data disk (/dev/sdb: the
	// second scsi disk).
	creds := tcCredentials(t, out.Talosconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, _, version, err := talosapi.ReadConfig(ctx, talosapi.Target{Node: worker.Address, Endpoints: []string{cp.Address}, Creds: creds}, talosapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	running := string(nc.Active)
	if version != "v1.12.5" || !strings.Contains(running, "kind: UserVolumeConfig") || !strings.Contains(running, "name: data") ||
		!strings.Contains(running, `disk.dev_path == "/dev/sdb"`) {
		t.Errorf("worker runs %s without the data volume on /dev/sdb", version)
	}
	knodes, err := kube.Nodes([]byte(out.Kubeconfig), "")
	if err != nil || len(knodes) != 2 {
		t.Fatalf("Kubernetes nodes %+v: %v", knodes, err)
	}
	for _, n := range knodes {
		if !n.Ready {
			t.Errorf("Kubernetes node %s is not Ready", n.Name)
		}
	}

	tcTimed(t, "second preview", func() harness.Result { return p.Preview(t, "--expect-no-changes") })

	tcTimed(t, "destroy", func() harness.Result { return p.Destroy(t) })
	if vms := l.VMs(); len(vms) != 0 {
		t.Errorf("destroy left VMs: %+v", vms)
	}
	for _, st := range l.Storages("pve1") {
		for _, v := range l.PVE.Volumes("pve1", st) {
			t.Errorf("destroy left volume %s", v.VolID)
		}
	}
}
