package e2e

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

const (
	vmType       = "proxmoxtalos:proxmox:VirtualMachine"
	downloadType = "proxmoxtalos:proxmox:DownloadFile"
)

// agentImageURL is a disk image whose guest runs a QEMU guest agent in the
// lab (pve.BasicBooter boots images whose URL mentions "agent").
const agentImageURL = "https://images.lab.example/lab-linux-agent.qcow2"

// adminClient is go-proxmox against the lab: what an administrator uses to
// prepare the cluster before the stack runs.
func adminClient(t *testing.T, l *lab.Lab) *proxmox.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(l.CACertPEM())
	id, secret, _ := strings.Cut(l.APIToken(), "=")
	return proxmox.NewClient(l.Endpoint()+"/api2/json", proxmox.WithAPIToken(id, secret), proxmox.WithRootCAs(pool))
}

func waitTaskOK(ctx context.Context, t *testing.T, task *proxmox.Task, what string) {
	t.Helper()
	if err := task.Wait(ctx, 10*time.Millisecond, time.Minute); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if task.ExitStatus != "OK" {
		t.Fatalf("%s: task ended %q", what, task.ExitStatus)
	}
}

// makeTemplate creates template vmid on node from the agent image (imported
// onto local-lvm), with a NIC and the agent enabled: the source of clones.
func makeTemplate(t *testing.T, l *lab.Lab, node string, vmid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := adminClient(t, l)
	n, err := c.Node(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	st, err := n.Storage(ctx, "local")
	if err != nil {
		t.Fatal(err)
	}
	task, err := st.DownloadURL(ctx, "import", "lab-linux-agent.qcow2", agentImageURL)
	if err != nil {
		t.Fatal(err)
	}
	waitTaskOK(ctx, t, task, "downloading the template image on "+node)
	task, err = n.NewVirtualMachine(ctx, vmid,
		proxmox.VirtualMachineOption{Name: "name", Value: fmt.Sprintf("tmpl-%s", node)},
		proxmox.VirtualMachineOption{Name: "memory", Value: 512},
		proxmox.VirtualMachineOption{Name: "scsihw", Value: "virtio-scsi-single"},
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:0,import-from=local:import/lab-linux-agent.qcow2"},
		proxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=vmbr0"},
		proxmox.VirtualMachineOption{Name: "agent", Value: "enabled=1"},
		proxmox.VirtualMachineOption{Name: "boot", Value: "order=scsi0"},
	)
	if err != nil {
		t.Fatal(err)
	}
	waitTaskOK(ctx, t, task, "creating the template VM on "+node)
	vm, err := n.VirtualMachine(ctx, vmid)
	if err != nil {
		t.Fatal(err)
	}
	task, err = vm.ConvertToTemplate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if task != nil {
		waitTaskOK(ctx, t, task, "converting VM to a template")
	}
}

// stackResource is one resource of `pulumi stack export`.
type stackResource struct {
	URN  string `json:"urn"`
	Type string `json:"type"`
	ID   string `json:"id"`
}

// stateIDs returns the IDs of the resources of type typ in the state, by URN.
func stateIDs(t *testing.T, export, typ string) map[string]string {
	t.Helper()
	var doc struct {
		Deployment struct {
			Resources []stackResource `json:"resources"`
		} `json:"deployment"`
	}
	if err := json.Unmarshal([]byte(export), &doc); err != nil {
		t.Fatalf("stack export is not JSON: %v", err)
	}
	out := map[string]string{}
	for _, r := range doc.Deployment.Resources {
		if r.Type == typ {
			out[r.URN] = r.ID
		}
	}
	return out
}

// labVMIDs are the resource IDs (<node>/<vmid>) of the lab's VMs that are
// not templates.
func labVMIDs(l *lab.Lab) []string {
	var out []string
	for _, vm := range l.VMs() {
		if !vm.Template {
			out = append(out, fmt.Sprintf("%s/%d", vm.Node, vm.VMID))
		}
	}
	sort.Strings(out)
	return out
}

// labISOs are the resource IDs (<node>/<volid>) of the ISO files in the
// lab's "local" storages.
func labISOs(l *lab.Lab) []string {
	var out []string
	for _, node := range l.Nodes() {
		for _, v := range l.PVE.Volumes(node, "local") {
			if v.Content == "iso" {
				out = append(out, node+"/"+v.VolID)
			}
		}
	}
	sort.Strings(out)
	return out
}

// requireAllKnown fails unless every VM and ISO that exists in the lab is in
// the state: the invariant a failed `up` must keep (nothing Pulumi does not
// know about). The state may hold more (a VM whose create failed is kept
// until a refresh shows it gone).
func requireAllKnown(t *testing.T, l *lab.Lab, export, when string) {
	t.Helper()
	known := map[string]bool{}
	for _, id := range stateIDs(t, export, vmType) {
		known[id] = true
	}
	for _, id := range stateIDs(t, export, downloadType) {
		known[id] = true
	}
	var unknown []string
	for _, id := range append(labVMIDs(l), labISOs(l)...) {
		if !known[id] {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		t.Fatalf("%s: the lab holds %v that the Pulumi state does not know (leaked); state:\n%s", when, unknown, export)
	}
}

// lockedVMs lists the lab's VMs that hold a config lock, with the lock.
func lockedVMs(l *lab.Lab) map[int]string {
	out := map[int]string{}
	for _, vm := range l.VMs() {
		if vm.Lock != "" {
			out[vm.VMID] = vm.Lock
		}
	}
	return out
}
