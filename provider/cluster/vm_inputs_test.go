package cluster

import (
	"fmt"
	"strings"
	"testing"

	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
)

// Issue 15, composition: the network settings that only reach the VMs may
// be outputs of resources not created yet. A preview plans with a
// placeholder, says so, and shows every VM's setting as unknown (changes
// once known); the machine configurations are not affected.
func TestUnknownNetworkSettingsInPreview(t *testing.T) {
	t.Parallel()
	unknown := presource.MakeComputed(presource.NewStringProperty(""))
	in := baseInputs()
	net := in["network"].(map[string]any)
	net["bridge"] = unknown
	net["vlan"] = unknown
	net["dnsServers"] = []any{"10.0.0.1", unknown}
	// A host without the placeholder bridge: the check waits for the value.
	hosts := threeHosts()
	for k, h := range hosts {
		h.Bridges = []string{"vmbr7"}
		hosts[k] = h
	}
	rec, resp, err := constructDry(t, true, &fakeInventory{hosts: hosts}, in)
	must(t, err)
	vms := rec.byType("VirtualMachine")
	if len(vms) != 5 {
		t.Fatalf("%d VMs planned", len(vms))
	}
	for _, vm := range vms {
		nic := vm.inputs.Get("networkDevices").AsArray().Get(0).AsMap()
		if !nic.Get("bridge").IsComputed() || !nic.Get("vlanId").IsComputed() {
			t.Errorf("VM %s: NIC %v, want bridge and vlanId unknown", vm.name, nic)
		}
		if mac := nic.Get("macAddress"); !mac.IsString() || mac.AsString() == "" {
			t.Errorf("VM %s: MAC %v, want the planned one", vm.name, mac)
		}
		dns := vm.inputs.Get("cloudInit").AsMap().Get("dns").AsMap()
		if !dns.Get("servers").IsComputed() {
			t.Errorf("VM %s: DNS %v, want servers unknown", vm.name, dns)
		}
	}
	if cfg := rec.get(t, "ConfigurationApply", "lab-cp-1").inputs.Get("machineConfiguration"); cfg.IsComputed() {
		t.Errorf("machine configuration unknown: the network settings do not reach it")
	}
	w := fmt.Sprint(resp.State.Get("warnings"))
	if !strings.Contains(w, "network.bridge, network.dnsServers[1], network.vlan are not known until the resources they come from are created") {
		t.Errorf("warnings = %s", w)
	}

	// An update gets the values and checks them against the hosts.
	in["network"].(map[string]any)["bridge"] = "vmbr0"
	in["network"].(map[string]any)["vlan"] = 20
	in["network"].(map[string]any)["dnsServers"] = []any{"10.0.0.1", "10.0.0.2"}
	_, _, err = construct(t, &fakeInventory{hosts: hosts}, in)
	if err == nil || !strings.Contains(err.Error(), `network.bridge: bridge "vmbr0" does not exist on Proxmox node`) {
		t.Errorf("update with a bridge the hosts lack: %v", err)
	}
}

// On an existing cluster the placeholder is what the VMs have: the summary
// lists each node as changing once known, and nothing else changes.
func TestUnknownNetworkSettingsOfAnExistingCluster(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	in["network"].(map[string]any)["searchDomain"] = "lab.example"
	inv, first := existingCluster(t, in)
	unknown := presource.MakeComputed(presource.NewStringProperty(""))
	in["network"].(map[string]any)["searchDomain"] = unknown
	in["network"].(map[string]any)["dnsServers"] = unknown
	rec, resp, err := constructDry(t, true, inv, in, appliedConfigs(first))
	must(t, err)
	for _, vm := range rec.byType("VirtualMachine") {
		dns := vm.inputs.Get("cloudInit").AsMap().Get("dns").AsMap()
		if !dns.Get("servers").IsComputed() || !dns.Get("domain").IsComputed() {
			t.Errorf("VM %s: DNS %v, want unknown", vm.name, dns)
		}
		nic := vm.inputs.Get("networkDevices").AsArray().Get(0).AsMap()
		if b := nic.Get("bridge"); !b.Equals(property.New(plan.DefaultBridge)) {
			t.Errorf("VM %s: bridge %v, want the known %s", vm.name, b, plan.DefaultBridge)
		}
		// the health gate's VM settings are what the VM has: no change
		// that the placeholder would invent
		was := first.get(t, "VirtualMachine", vm.name).inputs.Get("cloudInit").AsMap().Get("ipConfigs")
		if !vm.inputs.Get("cloudInit").AsMap().Get("ipConfigs").Equals(was) {
			t.Errorf("VM %s: ipConfigs changed", vm.name)
		}
	}
	// Talos reads DNS from the cloud-init drive at boot: if it changes,
	// the update restarts each VM, which the preview says.
	if s := fmt.Sprint(resp.State.Get("summary")); !strings.Contains(s, "all 5 nodes rebooted") {
		t.Errorf("summary %q: want every node shown rebooted once DNS is known", s)
	}
	for _, a := range rec.byType("ConfigurationApply") {
		if g := a.inputs.Get("healthGate").AsMap().Get("vm"); g.IsString() && g.AsString() != first.get(t, "ConfigurationApply", a.name).inputs.Get("healthGate").AsMap().Get("vm").AsString() {
			t.Errorf("apply %s: gate VM settings changed to %q", a.name, g.AsString())
		}
	}
}

// An unknown bridge of an existing cluster: every node is shown updated in
// place (Proxmox hotplugs network devices), none rebooted.
func TestUnknownBridgeOfAnExistingCluster(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	in := baseInputs()
	in["network"].(map[string]any)["bridge"] = presource.MakeComputed(presource.NewStringProperty(""))
	_, resp, err := constructDry(t, true, inv, in, appliedConfigs(first))
	must(t, err)
	if s := fmt.Sprint(resp.State.Get("summary")); !strings.Contains(s, "all 5 nodes updated live, no reboot") {
		t.Errorf("summary %q", s)
	}
}

// A network setting the plan does not need may not be a secret: Proxmox
// shows it in plain text.
func TestSecretNetworkSettingRefused(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	in["network"].(map[string]any)["bridge"] = presource.MakeSecret(presource.NewStringProperty("vmbr0"))
	_, _, err := constructDry(t, true, &fakeInventory{hosts: threeHosts()}, in)
	if err == nil || !strings.Contains(err.Error(), "network.bridge is a secret") {
		t.Errorf("secret bridge: %v", err)
	}
}

// A new hosts[].diskStorage moves each VM's OS disk live: every node's
// health gate names the new storage (healthGate.vm), so that its apply
// checks the cluster after its VM's move, before the next node's VM
// moves; the summary says it, and claims no reboot.
func TestDiskStorageChangeGatesEachNode(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	in := baseInputs()
	for _, h := range in["hosts"].([]any) {
		h.(map[string]any)["diskStorage"] = "fast"
	}
	rec, resp, err := constructDry(t, true, inv, in, appliedConfigs(first))
	must(t, err)
	want := "all 5 nodes updated live, no reboot (diskStorage local-lvm → fast; disks moved one node at a time, cluster health checked after each)"
	if s := resp.State.Get("summary").AsString(); s != want {
		t.Errorf("summary %q\nwant    %q", s, want)
	}
	applies := rec.byType("ConfigurationApply")
	if len(applies) != 5 {
		t.Fatalf("%d applies", len(applies))
	}
	for _, a := range applies {
		was := first.get(t, "ConfigurationApply", a.name).inputs.Get("healthGate").AsMap().Get("vm").AsString()
		got := a.inputs.Get("healthGate").AsMap().Get("vm").AsString()
		if !strings.Contains(was, " diskStorage=local-lvm ") || got != strings.Replace(was, "diskStorage=local-lvm", "diskStorage=fast", 1) {
			t.Errorf("apply %s: gate VM settings %q → %q, want only the storage to change", a.name, was, got)
		}
	}
}

// TestSataDataDiskChangeGatesEachWorker: a data disk added on sata stays
// pending until the VM restarts (qemu-server hot-plugs scsi and virtio
// only), which the VM's update does: each worker's apply sees its gate's
// VM settings change, so the next worker's VM restarts only once the
// cluster is healthy again (review s14b M1); the summary says restart.
func TestSataDataDiskChangeGatesEachWorker(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	in["diskInterface"] = "sata"
	inv, first := existingCluster(t, in)
	in = baseInputs()
	in["diskInterface"] = "sata"
	in["workerPools"] = []any{map[string]any{"name": "workers", "count": 2, "dataDisks": []any{map[string]any{"size": 8}}}}
	rec, resp, err := constructDry(t, true, inv, in, appliedConfigs(first))
	must(t, err)
	want := "2 rebooted one at a time (data disks - → sata1:8:local-lvm (a sata disk is added or removed only at a restart)): lab-workers-1, lab-workers-2"
	if s := resp.State.Get("summary").AsString(); s != want {
		t.Errorf("summary %q\nwant    %q", s, want)
	}
	for _, a := range rec.byType("ConfigurationApply") {
		was := first.get(t, "ConfigurationApply", a.name).inputs.Get("healthGate").AsMap().Get("vm").AsString()
		got := a.inputs.Get("healthGate").AsMap().Get("vm").AsString()
		wantVM := was
		if strings.HasPrefix(a.name, "lab-workers-") {
			wantVM = strings.Replace(was, " dataDisks=", " dataDisks=sata1:8:local-lvm", 1)
		}
		if !strings.HasSuffix(was, " dataDisks=") || got != wantVM {
			t.Errorf("apply %s: gate VM settings %q → %q, want %q", a.name, was, got, wantVM)
		}
	}
}

// TestOSDiskGrowthGatesEachNode: a larger size.diskSize grows each VM's
// OS disk while it runs (qemu-server resize): every node's health gate
// follows the size (healthGate.vm diskSize=), so that its apply checks the
// cluster after its VM's disk grew, before the next node's grows; the
// summary names the change and the checks. A smaller one stays refused.
func TestOSDiskGrowthGatesEachNode(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	sized := func(gib int) map[string]any {
		in := baseInputs()
		in["controlPlane"] = map[string]any{"size": map[string]any{"diskSize": gib}}
		in["workerPools"].([]any)[0].(map[string]any)["size"] = map[string]any{"diskSize": gib}
		return in
	}
	rec, resp, err := constructDry(t, true, inv, sized(30), appliedConfigs(first))
	must(t, err)
	want := "all 5 nodes updated live, no reboot (diskSize 20 → 30 GiB; disks grown one node at a time, cluster health checked after each)"
	if s := resp.State.Get("summary").AsString(); s != want {
		t.Errorf("summary %q\nwant    %q", s, want)
	}
	applies := rec.byType("ConfigurationApply")
	if len(applies) != 5 {
		t.Fatalf("%d applies", len(applies))
	}
	for _, a := range applies {
		was := first.get(t, "ConfigurationApply", a.name).inputs.Get("healthGate").AsMap().Get("vm").AsString()
		got := a.inputs.Get("healthGate").AsMap().Get("vm").AsString()
		if !strings.Contains(was, " diskSize=20GiB ") || got != strings.Replace(was, "diskSize=20GiB", "diskSize=30GiB", 1) {
			t.Errorf("apply %s: gate VM settings %q → %q, want only the OS disk's size to change", a.name, was, got)
		}
	}

	_, _, err = constructDry(t, true, inv, sized(15), appliedConfigs(first))
	if err == nil || !strings.Contains(err.Error(), "node lab-cp-1 has a 20 GiB OS disk: disks cannot shrink (to 15 GiB)") {
		t.Errorf("OS disk shrunk: %v, want it refused", err)
	}
}
