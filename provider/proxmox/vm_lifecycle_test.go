package proxmox_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// isoInputs is a lab ISO whose guest runs a QEMU guest agent (pve.BasicBooter).
func isoInputs(node string) property.Map {
	return property.NewMap(map[string]property.Value{
		"node":     str(node),
		"storage":  str("local"),
		"url":      str("https://images.example.com/lablinux/qemu-guest-agent/lablinux-1.0.iso"),
		"fileName": str("lablinux-1.0-agent.iso"),
	})
}

// vmInputs is an ISO-booted VM with a disk, a NIC on vmbr0, a static
// cloud-init address from the lab's block and the guest agent.
func vmInputs(e *env, node, name, iso string, host int) map[string]property.Value {
	addr := e.lab.AddressBlock().Addr().As4()
	addr[3] = byte(host)
	ip := strconv.Itoa(int(addr[0])) + "." + strconv.Itoa(int(addr[1])) + "." + strconv.Itoa(int(addr[2])) + "." + strconv.Itoa(int(addr[3]))
	return map[string]property.Value{
		"node":   str(node),
		"name":   str(name),
		"tags":   arr(str("talos"), str("controlplane")),
		"iso":    str(iso),
		"osType": str("l26"),
		"cpu":    obj(map[string]property.Value{"cores": num(2), "type": str("host")}),
		"memory": obj(map[string]property.Value{"dedicated": num(2048)}),
		"disks": arr(obj(map[string]property.Value{
			"interface": str("scsi0"), "storage": str("local-lvm"), "size": num(8), "ssd": boolean(true),
		})),
		"scsiHardware":   str("virtio-scsi-single"),
		"networkDevices": arr(obj(map[string]property.Value{"bridge": str("vmbr0")})),
		"cloudInit": obj(map[string]property.Value{
			"storage": str("local-lvm"),
			"ipConfigs": arr(obj(map[string]property.Value{
				"ipv4": obj(map[string]property.Value{"address": str(ip + "/24")}),
			})),
			"dns": obj(map[string]property.Value{"servers": arr(str("1.1.1.1"))}),
		}),
		"agent": obj(map[string]property.Value{"enabled": boolean(true), "timeout": num(30)}),
	}
}

func TestVirtualMachineISOBootLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})

	isoID, isoState := e.create(downloadType, "iso", isoInputs("pve1"))
	volid := isoState.Get("volumeId").AsString()
	if isoID != "pve1/local:iso/lablinux-1.0-agent.iso" || volid != "local:iso/lablinux-1.0-agent.iso" {
		t.Fatalf("download id %q volume %q", isoID, volid)
	}

	in := property.NewMap(vmInputs(e, "pve1", "cp1", volid, 21))
	id, st := e.create(vmType, "cp1", in)
	vmid := getNum(t, st, "vmId")
	if id != "pve1/"+strconv.Itoa(vmid) || vmid < 100 {
		t.Fatalf("id %q vmId %d", id, vmid)
	}
	if s := st.Get("status").AsString(); s != "running" {
		t.Errorf("status %q, want running", s)
	}
	if macs := getStrings(st, "macAddresses"); len(macs) != 1 || !strings.HasPrefix(macs[0], "BC:24:11:") {
		t.Errorf("macAddresses %v", macs)
	}
	ip := strings.TrimSuffix(in.Get("cloudInit").AsMap().Get("ipConfigs").AsArray().Get(0).AsMap().Get("ipv4").AsMap().Get("address").AsString(), "/24")
	if got := getStrings(st, "ipv4Addresses"); !slices.Equal(got, []string{ip}) {
		t.Errorf("ipv4Addresses %v, want [%s] from the guest agent", got, ip)
	}
	if u := st.Get("smbiosUuid").AsString(); len(u) != 36 {
		t.Errorf("smbiosUuid %q", u)
	}
	cur, _, _ := e.lab.VMConfig(vmid)
	if cur["cores"] != "2" || cur["ostype"] != "l26" || !strings.Contains(cur["ide2"], volid) || cur["citype"] != "nocloud" {
		t.Errorf("config in Proxmox: %v", cur)
	}

	// a second preview is empty, and so is one after a refresh
	if d := e.diff(vmType, "cp1", id, st, in, in); d.HasChanges {
		t.Fatalf("second diff not empty: %v", diffKinds(d))
	}
	rd := e.read(vmType, "cp1", id, st, in)
	if rd.ID != id {
		t.Fatalf("read id %q", rd.ID)
	}
	if d := e.diff(vmType, "cp1", id, rd.Properties, rd.Inputs, in); d.HasChanges {
		t.Fatalf("diff after refresh not empty: %v", diffKinds(d))
	}

	// update in place: cores 2 -> 4, which Proxmox applies at the next start
	in2 := in.Set("cpu", obj(map[string]property.Value{"cores": num(4), "type": str("host")}))
	d := e.diff(vmType, "cp1", id, st, in, in2)
	if want := map[string]p.DiffKind{"cpu.cores": p.Update}; !equalKinds(diffKinds(d), want) {
		t.Fatalf("diff for cores: %v, want %v", diffKinds(d), want)
	}
	st2 := e.update(vmType, "cp1", id, st, in, in2)
	cur, pending, _ := e.lab.VMConfig(vmid)
	if cur["cores"] != "4" || len(pending) != 0 {
		t.Errorf("after the update: cores %q, pending %v (the VM should have been restarted)", cur["cores"], pending)
	}
	if getNum(t, st2, "vmId") != vmid || st2.Get("status").AsString() != "running" {
		t.Errorf("state after update: %v", st2)
	}
	if d := e.diff(vmType, "cp1", id, st2, in2, in2); d.HasChanges {
		t.Fatalf("diff after update not empty: %v", diffKinds(d))
	}

	// drift: someone sets 6 cores in the Proxmox UI; refresh shows it
	if err := e.lab.SetVMConfig(vmid, "cores", "6"); err != nil {
		t.Fatal(err)
	}
	rd = e.read(vmType, "cp1", id, st2, in2)
	d = e.diff(vmType, "cp1", id, rd.Properties, rd.Inputs, in2)
	if want := map[string]p.DiffKind{"cpu.cores": p.Update}; !equalKinds(diffKinds(d), want) {
		t.Fatalf("drift diff %v, want %v", diffKinds(d), want)
	}
	st3 := e.update(vmType, "cp1", id, rd.Properties, rd.Inputs, in2)
	if cur, _, _ := e.lab.VMConfig(vmid); cur["cores"] != "4" {
		t.Errorf("drift not corrected: cores %q", cur["cores"])
	}

	e.delete(vmType, "cp1", id, st3)
	e.requireNoVMs()
	e.delete(vmType, "cp1", id, st3) // already gone: success
	e.delete(downloadType, "iso", isoID, isoState)
	if rd := e.read(downloadType, "iso", isoID, isoState, isoInputs("pve1")); rd.ID != "" {
		t.Errorf("the ISO is still there after delete")
	}
}

func equalKinds(a, b map[string]p.DiffKind) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
