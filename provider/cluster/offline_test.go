package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
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
	var st proxmox.VirtualMachineState
	if err := childargs.Decode(outs, &st); err != nil {
		t.Fatal(err)
	}
	got := observeState(&st)
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
	s, err := newStackState(map[string]any{
		under + "proxmoxtalos:proxmox:VirtualMachine::lab-workers-1":  map[string]any{"type": tokenVirtualMachine, "outputs": vm},
		under + "proxmoxtalos:proxmox:VirtualMachine::other-1":        map[string]any{"type": tokenVirtualMachine, "outputs": other},
		"urn:pulumi:ci::p::proxmoxtalos:proxmox:VirtualMachine::mine": map[string]any{"type": tokenVirtualMachine, "outputs": vm},
		under + "proxmoxtalos:talos:ConfigurationApply::lab-workers-1": map[string]any{"type": tokenConfigurationApply,
			"outputs": map[string]any{"node": "10.0.0.13", "machineConfiguration": "version: v1alpha1", "runningVersion": "v1.12.5"}},
	}, "lab")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.vms) != 1 || s.vms[0].VMID != 104 {
		t.Errorf("the cluster's VMs: %+v", s.vms)
	}
	if r, _ := s.readConfig(t.Context(), "10.0.0.13", nil); r.Config != "version: v1alpha1" || r.TalosVersion != "v1.12.5" {
		t.Errorf("what node 10.0.0.13 runs: %+v", r)
	}
	if a := s.applied; len(a) != 1 || a["lab-workers-1"].address != "10.0.0.13" {
		t.Errorf("the nodes with an apply, by name: %+v", a)
	}
	if r, _ := s.readConfig(t.Context(), "10.0.0.99", nil); r.Config != "" {
		t.Errorf("a node without an apply runs %+v", r)
	}
	if hosts, err := s.Hosts(t.Context()); hosts != nil || err != nil {
		t.Errorf("hosts offline: %v, %v", hosts, err)
	}
}

// An offline preview of an existing cluster plans from the stack's state
// alone (neither the inventory nor the nodes are asked) and registers what
// an online preview registers; an offline update is refused before
// anything is registered.
func TestOfflinePreviewPlansFromTheStackState(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	running := appliedConfigs(first)
	online, onResp, err := constructDry(t, true, inv, baseInputs(), running)
	must(t, err)

	state := stackStateOf(first)
	asked := func(what string) error { t.Errorf("the offline preview asked %s", what); return errors.New("offline") }
	c := &Component{
		inventory: func(context.Context) (Inventory, error) { return nil, asked("Proxmox") },
		readConfig: func(context.Context, string, *talosapi.Credentials) (runningNode, error) {
			return runningNode{}, asked("a node")
		},
		readMembers: func(context.Context, []string, *talosapi.Credentials) (map[string]string, error) {
			return nil, asked("members")
		},
		extensions: labFactoryExtensions(t),
		stack:      func(*pulumi.Context) (map[string]any, error) { return state, nil },
		offline:    func() bool { return true },
	}
	offline, offResp, err := constructWith(t, c, true, baseInputs())
	must(t, err)
	if on, off := online.keys(), offline.keys(); !slices.Equal(on, off) {
		t.Errorf("registered online %v\noffline %v", on, off)
	}
	for _, reg := range online.byType("VirtualMachine") {
		if off := offline.get(t, "VirtualMachine", reg.name); !off.inputs.Equals(reg.inputs) {
			t.Errorf("VM %s: offline inputs differ from online ones", reg.name)
		}
	}
	if on, off := onResp.State.Get("summary").AsString(), offResp.State.Get("summary").AsString(); on != off {
		t.Errorf("summary online %q, offline %q", on, off)
	}
	warnings := offResp.State.Get("warnings").AsArray().AsSlice()
	if len(warnings) < len(offlineChecks) || !strings.Contains(warnings[0].AsString(), "not checked: "+string(offlineChecks[0])) {
		t.Errorf("the offline preview's warnings do not start with the skipped checks: %v", warnings)
	}

	refused, _, err := constructWith(t, c, false, baseInputs())
	if err == nil || !strings.Contains(err.Error(), "PROXMOXTALOS_OFFLINE_PREVIEW") || len(refused.keys()) > 0 {
		t.Errorf("an offline update: %v, registered %v", err, refused.keys())
	}
}

// plainValue is v as the engine's invoke hands it over: plain Go values,
// secrets unwrapped.
func plainValue(v property.Value) any {
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsNumber():
		return v.AsNumber()
	case v.IsBool():
		return v.AsBool()
	case v.IsArray():
		var out []any
		for _, e := range v.AsArray().AsSlice() {
			out = append(out, plainValue(e))
		}
		return out
	case v.IsMap():
		out := map[string]any{}
		for k, e := range v.AsMap().All {
			out[k] = plainValue(e)
		}
		return out
	}
	return nil
}

// Offline, a Kubernetes upgrade that removes API versions is not checked
// against the cluster (its API is not asked): a warning says what to check.
func TestOfflineRemovedAPIsAreNotAsked(t *testing.T) {
	t.Parallel()
	p := &plan.Plan{Cluster: plan.ClusterConfig{KubernetesVersion: "v1.37.0"}}
	prev := &plan.State{Nodes: []plan.NodeState{
		{Name: "lab-cp-1", Role: plan.RoleControlPlane, Address: "10.5.0.11", KubernetesVersion: "v1.36.3"},
	}}
	readings := map[string]nodeReading{"lab-cp-1": {running: runningNode{Config: "version: v1alpha1"}}}
	c := &Component{offline: func() bool { return true },
		countObjects: func(context.Context, string, []string, *talosapi.Credentials) (map[string]int, error) {
			t.Error("the offline preview asked the Kubernetes API")
			return nil, nil
		}}
	w, err := c.checkRemovedAPIs(t.Context(), p, prev, readings, &talosapi.Credentials{})
	if err != nil || !strings.Contains(w, "was not checked") || !strings.Contains(w, "offline preview") {
		t.Errorf("warning %q, error %v", w, err)
	}
}

// stackStateOf is the stack's state after an update that registered what
// rec holds, as the engine returns it (readStack): each child's outputs.
func stackStateOf(rec *recorder) map[string]any {
	state := map[string]any{}
	vmid := 100
	for _, reg := range rec.regs {
		outs := reg.inputs.AsMap()
		switch reg.typ {
		case "VirtualMachine":
			vmid++
			outs["vmId"] = property.New(float64(vmid))
			outs["status"] = property.New("running")
		case "ConfigurationApply":
			outs["runningVersion"] = property.New("v1.12.5")
			delete(outs, "clientConfiguration") // not in its state (talos.StateCopies)
		}
		urn := "urn:pulumi:test::proj::" + tokenComponent + "$proxmoxtalos:x:" + reg.typ + "::" + reg.name
		state[urn] = map[string]any{"type": "proxmoxtalos:" + map[bool]string{true: "proxmox", false: "talos"}[reg.typ == "VirtualMachine" || reg.typ == "DownloadFile"] + ":" + reg.typ,
			"outputs": plainValue(property.New(property.NewMap(outs)))}
	}
	return state
}

// A child's outputs that cannot be read say what they were read for: the
// offline preview, or telling a VM deleted outside Pulumi from a new node
// in an online preview or update (review 2026-11-29 01:15 item 6: both
// said "for the offline preview").
func TestStackStateErrorSaysWhatItWasReadFor(t *testing.T) {
	t.Parallel()
	const urn = "urn:pulumi:ci::p::proxmoxtalos:index:TalosCluster$proxmoxtalos:talos:ConfigurationApply::lab-workers-1"
	bad := map[string]any{urn: map[string]any{"type": tokenConfigurationApply, "outputs": map[string]any{"node": []any{"10.0.0.13"}}}}
	_, err := newStackState(bad, "lab")
	if err == nil || !strings.HasPrefix(err.Error(), "reading "+urn+" from the stack's state for the offline preview: ") ||
		!strings.HasSuffix(err.Error(), "; an online preview reads the cluster from Proxmox and its nodes instead") {
		t.Errorf("offline: %v", err)
	}
	_, err = collectStackState(bad, "lab", "to tell a VM deleted outside Pulumi from a new node")
	if err == nil || !strings.HasPrefix(err.Error(), "reading "+urn+" from the stack's state to tell a VM deleted outside Pulumi from a new node: ") ||
		strings.Contains(err.Error(), "offline") {
		t.Errorf("online: %v", err)
	}
}

// A VM whose last create or update failed part-way stores the status
// "unknown" (proxmox.StatusUnfinished), the word Proxmox lists for a guest
// of an offline node. Offline, that VM's host is not offline (the stack's
// state says nothing of hosts): the preview says its update did not finish,
// counts its control plane as running for etcd, and still refuses what only
// a new VM could apply to it, as an online preview does (review s14c S1:
// the preview said "pve2 is offline", counted lab-cp-2 down for quorum and
// no longer refused a diskInterface change of it).
func TestOfflinePreviewOfAnUnfinishedVM(t *testing.T) {
	t.Parallel()
	_, first := existingCluster(t, baseInputs())
	state := stackStateOf(first)
	var unfinished map[string]any
	for urn, r := range state {
		if strings.HasSuffix(urn, "VirtualMachine::lab-cp-2") {
			unfinished = r.(map[string]any)["outputs"].(map[string]any)
			unfinished["status"] = proxmox.StatusUnfinished
		}
	}
	if unfinished == nil {
		t.Fatal("no VM lab-cp-2 in the stack's state")
	}
	c := &Component{
		extensions: labFactoryExtensions(t),
		stack:      func(*pulumi.Context) (map[string]any, error) { return state, nil },
		offline:    func() bool { return true },
	}
	_, resp, err := constructWith(t, c, true, baseInputs())
	must(t, err)
	var said []string
	for _, w := range resp.State.Get("warnings").AsArray().AsSlice() {
		said = append(said, w.AsString())
	}
	all := strings.Join(said, "\n")
	want := fmt.Sprintf("lab-cp-2: the last create or update of VM %v on %s did not finish; pulumi up runs it again", unfinished["vmId"], unfinished["node"])
	if !strings.Contains(all, want) || strings.Contains(all, "offline or does not answer") || strings.Contains(all, "etcd:") {
		t.Errorf("warnings:\n%s\nwant %q, no offline host, no etcd quorum line", all, want)
	}
	if s := resp.State.Get("summary").AsString(); strings.Contains(s, "unknown") || strings.Contains(s, "etcd") {
		t.Errorf("summary %q", s)
	}

	virtio := baseInputs()
	virtio["diskInterface"] = "virtio"
	_, _, err = constructWith(t, c, true, virtio)
	if err == nil || !strings.Contains(err.Error(), "diskInterface: the OS disk of nodes lab-cp-1, lab-cp-2, lab-cp-3, lab-workers-1, lab-workers-2 is on the scsi bus") {
		t.Errorf("a diskInterface change offline: %v", err)
	}
}
