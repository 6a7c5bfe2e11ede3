package proxmox

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

func running() pve.VMStatus { return pve.VMStatus{Status: "running"} }

func TestObserveArgsForImport(t *testing.T) {
	t.Parallel()
	o := observation{Ref: pve.VMRef{Node: "pve1", VMID: 104}, Config: liveFromCreate(), Status: running(), Pool: "k8s"}
	a := observeArgs(o)
	want := VirtualMachineArgs{
		Node: "pve1", VMID: ptr(104), Name: ptr("cp1"), Tags: []string{"controlplane", "talos"}, Pool: ptr("k8s"),
		ISO:          ptr("local:iso/talos.iso"),
		CPU:          &VirtualMachineCpu{Cores: ptr(2), Sockets: ptr(1), Type: ptr("host")},
		Memory:       &VirtualMachineMemory{Dedicated: 4096},
		ScsiHardware: ptr(ScsiHardware("virtio-scsi-single")), OsType: ptr(OsType("l26")),
		Disks: []VirtualMachineDisk{{Interface: "scsi0", Storage: "local-lvm", Size: 20, SSD: ptr(true), IOThread: ptr(true)}},
		NetworkDevices: []VirtualMachineNetworkDevice{{Bridge: "vmbr0", Model: ptr(NetworkModel("virtio")),
			VLANID: ptr(20), MACAddress: ptr("BC:24:11:AA:BB:01")}},
		CloudInit: &VirtualMachineCloudInit{Storage: "local-lvm",
			IPConfigs: []VirtualMachineIpConfig{{IPv4: &VirtualMachineIpAddress{Address: "10.0.0.21/24", Gateway: ptr("10.0.0.1")}}},
			DNS:       &VirtualMachineDns{Servers: []string{"1.1.1.1", "9.9.9.9"}, Domain: ptr("lab")}},
		Agent:      &VirtualMachineAgent{Enabled: ptr(true)},
		SmbiosUUID: ptr("0e8a5a39-0a4f-4b8e-9b55-e4c0c8e0c0aa"),
	}
	if !reflect.DeepEqual(flatten(a), flatten(want)) {
		t.Errorf("observed\n %v\nwant\n %v", flatten(a), flatten(want))
	}
	// the imported inputs describe the VM exactly: planning them changes nothing
	if p, err := planConfig(&a, a, o.Config); err != nil || !p.empty() {
		t.Errorf("import inputs do not round-trip: %+v %v", p, err)
	}
}

func TestReconcileAfterOwnCreateReportsNothing(t *testing.T) {
	t.Parallel()
	in := talosArgs()
	in.Tags = []string{"talos", "controlplane"} // the user's order
	obs := observeArgs(observation{Ref: pve.VMRef{Node: "pve1", VMID: 104}, Config: liveFromCreate(), Status: running()})
	r := reconcile(in, obs)
	if d := diffVM(stateOf(r, 104), in); d.HasChanges {
		t.Fatalf("refresh of an unchanged VM shows a diff: %v\nreconciled %v", kinds(d), flatten(r))
	}
}

func TestReconcileShowsDrift(t *testing.T) {
	t.Parallel()
	in := talosArgs()
	live := liveFromCreate()
	live["cores"] = "6"                                                 // changed in the Proxmox UI
	live["scsi0"] = "local-lvm:vm-104-disk-0,iothread=1,size=30G,ssd=1" // grown out of band
	live["tags"] = "talos"
	delete(live, "net0")
	obs := observeArgs(observation{Ref: pve.VMRef{Node: "pve1", VMID: 104}, Config: live, Status: pve.VMStatus{Status: "stopped"}})
	d := diffVM(stateOf(reconcile(in, obs), 104), in)
	want := map[string]bool{"cpu.cores": true, "disks[0].size": true, "tags": true, "networkDevices[0]": true, "started": true}
	got := map[string]bool{}
	for k := range d.DetailedDiff {
		got[k] = true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("drift diff %v, want keys %v", kinds(d), want)
	}
}

func TestSplitAddressesSkipsUnreachable(t *testing.T) {
	t.Parallel()
	var addrs []netip.Addr
	for _, s := range []string{"127.0.0.1", "::1", "127.12.34.21", "192.168.1.5", "169.254.1.1", "fe80::1", "fd00::21", "::ffff:10.0.0.1"} {
		addrs = append(addrs, netip.MustParseAddr(s))
	}
	v4, v6 := splitAddresses(addrs)
	if !reflect.DeepEqual(v4, []string{"127.12.34.21", "192.168.1.5", "10.0.0.1"}) || !reflect.DeepEqual(v6, []string{"fd00::21"}) {
		t.Fatalf("v4 %v v6 %v", v4, v6)
	}
}
