package cluster

import (
	"encoding/json"
	"testing"
)

// The VM of TestObserveVM as the stack's state holds it (the outputs of
// its VirtualMachine resource, as JSON numbers): an offline preview must
// rebuild the same node from it as an online one from Proxmox.
const stateVM = `{
  "node": "pve2", "vmId": 104, "name": "lab-workers-1", "status": "running",
  "tags": ["proxmoxtalos", "cluster-lab", "worker", "pool-workers", "k8s-v1.35.0", "schematic-ce4c980550dd", "talos-v1.12.5"],
  "cpu": {"cores": 4, "sockets": 1, "type": "x86-64-v2-AES"},
  "memory": {"dedicated": 8192, "floating": 0},
  "disks": [
    {"interface": "scsi0", "storage": "local-lvm", "size": 20, "ssd": true},
    {"interface": "scsi1", "storage": "ceph", "size": 1}
  ],
  "iso": "local:iso/talos-v1.12.5-ce4c980550dd-nocloud-amd64.iso",
  "networkDevices": [
    {"bridge": "vmbr0", "vlanId": 20, "mtu": 9000, "macAddress": "02:ab:cd:ef:01:02"},
    {"bridge": "vmbr1", "firewall": false}
  ],
  "macAddresses": ["02:AB:CD:EF:01:02", "02:AB:CD:EF:01:03"],
  "cloudInit": {
    "storage": "local-lvm",
    "ipConfigs": [{"ipv4": {"address": "10.0.0.13/24", "gateway": "10.0.0.1"}}, {"ipv4": {"address": "dhcp"}}],
    "dns": {"servers": ["10.0.0.1", "1.1.1.1"], "domain": "lab.example"}
  }
}`

func TestObserveStateIsObserveVM(t *testing.T) {
	t.Parallel()
	var outs map[string]any
	if err := json.Unmarshal([]byte(stateVM), &outs); err != nil {
		t.Fatal(err)
	}
	fromProxmox := observeVM(104, "pve2", map[string]string{
		"name":         "lab-workers-1",
		"tags":         "cluster-lab;k8s-v1.35.0;pool-workers;proxmoxtalos;schematic-ce4c980550dd;talos-v1.12.5;worker",
		"cores":        "4",
		"sockets":      "1",
		"cpu":          "x86-64-v2-AES",
		"memory":       "8192",
		"scsi0":        "local-lvm:vm-104-disk-0,discard=on,iothread=1,size=20G,ssd=1",
		"scsi1":        "ceph:vm-104-disk-1,size=1G",
		"ide0":         "local-lvm:vm-104-cloudinit,media=cdrom",
		"ide2":         "local:iso/talos-v1.12.5-ce4c980550dd-nocloud-amd64.iso,media=cdrom",
		"net0":         "virtio=02:AB:CD:EF:01:02,bridge=vmbr0,tag=20,mtu=9000",
		"net1":         "virtio=02:AB:CD:EF:01:03,bridge=vmbr1,firewall=0",
		"ipconfig0":    "ip=10.0.0.13/24,gw=10.0.0.1",
		"ipconfig1":    "ip=dhcp",
		"nameserver":   "10.0.0.1 1.1.1.1",
		"searchdomain": "lab.example",
	})
	fromProxmox.Status = "running"
	got := observeState(outs)
	if !equalObserved(got, fromProxmox) || got.ISOVolume != fromProxmox.ISOVolume || got.Status != "running" {
		t.Errorf("from the state\n %+v\nfrom Proxmox\n %+v", got, fromProxmox)
	}
}

// Only the cluster's VMs and node applies, found under a TalosCluster.
func TestNewStackState(t *testing.T) {
	t.Parallel()
	var vm map[string]any
	if err := json.Unmarshal([]byte(stateVM), &vm); err != nil {
		t.Fatal(err)
	}
	other := map[string]any{"node": "pve1", "vmId": float64(200), "tags": []any{"proxmoxtalos", "cluster-other"}}
	const under = "urn:pulumi:ci::p::proxmoxtalos:index:TalosCluster$"
	s := newStackState(map[string]any{
		under + "proxmoxtalos:proxmox:VirtualMachine::lab-workers-1":  map[string]any{"type": tokenVirtualMachine, "outputs": vm},
		under + "proxmoxtalos:proxmox:VirtualMachine::other-1":        map[string]any{"type": tokenVirtualMachine, "outputs": other},
		"urn:pulumi:ci::p::proxmoxtalos:proxmox:VirtualMachine::mine": map[string]any{"type": tokenVirtualMachine, "outputs": vm},
		under + "proxmoxtalos:talos:ConfigurationApply::lab-workers-1": map[string]any{"type": tokenConfigurationApply,
			"outputs": map[string]any{"node": "10.0.0.13", "machineConfiguration": "version: v1alpha1", "runningVersion": "v1.12.5"}},
	}, "lab")
	if len(s.vms) != 1 || s.vms[0].VMID != 104 {
		t.Errorf("the cluster's VMs: %+v", s.vms)
	}
	if r, _ := s.readConfig(t.Context(), "10.0.0.13", nil); r.Config != "version: v1alpha1" || r.TalosVersion != "v1.12.5" {
		t.Errorf("what node 10.0.0.13 runs: %+v", r)
	}
	if r, _ := s.readConfig(t.Context(), "10.0.0.99", nil); r.Config != "" {
		t.Errorf("a node without an apply runs %+v", r)
	}
	if hosts, err := s.Hosts(t.Context()); hosts != nil || err != nil {
		t.Errorf("hosts offline: %v, %v", hosts, err)
	}
}
