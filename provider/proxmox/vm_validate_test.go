package proxmox

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

func TestValidateVMAcceptsGoodInputs(t *testing.T) {
	t.Parallel()
	if f := validateVM(talosArgs(), nil, unknowns{}); len(f) != 0 {
		t.Fatalf("good inputs refused: %v", f)
	}
}

func TestValidateVMRefusesBadInputs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(a *VirtualMachineArgs)
		path   string
		reason string
	}{
		{"no node", func(a *VirtualMachineArgs) { a.Node = "" }, "node", "required"},
		{"vmid too small", func(a *VirtualMachineArgs) { a.VMID = ptr(99) }, "vmId", "100 to 999999999"},
		{"name with underscore", func(a *VirtualMachineArgs) { a.Name = ptr("cp_1") }, "name", "DNS name"},
		{"bad tag", func(a *VirtualMachineArgs) { a.Tags = []string{"ok", "-bad"} }, "tags[1]", "tag"},
		{"memory 0", func(a *VirtualMachineArgs) { a.Memory.Dedicated = 0 }, "memory.dedicated", "at least 16 MiB"},
		{"balloon above memory", func(a *VirtualMachineArgs) { a.Memory.Floating = ptr(8192) }, "memory.floating", "between 0"},
		{"zero cores", func(a *VirtualMachineArgs) { a.CPU.Cores = ptr(0) }, "cpu.cores", "at least 1"},
		{"malformed disk interface", func(a *VirtualMachineArgs) { a.Disks[0].Interface = "scsi31" }, "disks[0].interface", "scsi0-scsi30"},
		{"disk on the ISO drive", func(a *VirtualMachineArgs) { a.Disks[0].Interface = "ide2" }, "disks[0].interface", "ISO"},
		{"disk on the cloud-init drive", func(a *VirtualMachineArgs) { a.Disks[0].Interface = "ide0" }, "disks[0].interface", "cloud-init"},
		{"disk twice", func(a *VirtualMachineArgs) { a.Disks = append(a.Disks, a.Disks[0]) }, "disks[1].interface", "twice"},
		{"disk size 0", func(a *VirtualMachineArgs) { a.Disks[0].Size = 0 }, "disks[0].size", "at least 1 GiB"},
		{"ssd on virtio", func(a *VirtualMachineArgs) { a.Disks[0].Interface = "virtio0"; a.Disks[0].IOThread = nil }, "disks[0].ssd", "virtio"},
		{"iothread on sata", func(a *VirtualMachineArgs) { a.Disks[0].Interface = "sata0" }, "disks[0].iothread", "virtio and scsi"},
		{"bad storage", func(a *VirtualMachineArgs) { a.Disks[0].Storage = "local lvm" }, "disks[0].storage", "storage ID"},
		{"vlan 4095", func(a *VirtualMachineArgs) { a.NetworkDevices[0].VLANID = ptr(4095) }, "networkDevices[0].vlanId", "1 to 4094"},
		{"multicast MAC", func(a *VirtualMachineArgs) { a.NetworkDevices[0].MACAddress = ptr("01:00:5E:00:00:01") }, "networkDevices[0].macAddress", "unicast"},
		{"mtu 100", func(a *VirtualMachineArgs) { a.NetworkDevices[0].MTU = ptr(100) }, "networkDevices[0].mtu", "576"},
		{"no bridge", func(a *VirtualMachineArgs) { a.NetworkDevices[0].Bridge = "" }, "networkDevices[0].bridge", "bridge"},
		{"iso not a volume", func(a *VirtualMachineArgs) { a.ISO = ptr("talos.iso") }, "iso", "<storage>:iso/"},
		{"address without prefix", func(a *VirtualMachineArgs) {
			a.CloudInit.IPConfigs[0].IPv4.Address = "10.0.0.21"
		}, "cloudInit.ipConfigs[0].ipv4.address", "prefix length"},
		{"gateway with dhcp", func(a *VirtualMachineArgs) {
			a.CloudInit.IPConfigs[0].IPv4.Address = "dhcp"
		}, "cloudInit.ipConfigs[0].ipv4.gateway", "static address"},
		{"IPv6 in the IPv4 slot", func(a *VirtualMachineArgs) {
			a.CloudInit.IPConfigs[0].IPv4 = &VirtualMachineIpAddress{Address: "fd00::1/64"}
		}, "cloudInit.ipConfigs[0].ipv4.address", "IPv4"},
		{"more ip configs than NICs", func(a *VirtualMachineArgs) {
			a.CloudInit.IPConfigs = append(a.CloudInit.IPConfigs, VirtualMachineIpConfig{})
		}, "cloudInit.ipConfigs", "network devices"},
		{"dns server", func(a *VirtualMachineArgs) { a.CloudInit.DNS.Servers = []string{"dns.example"} }, "cloudInit.dns.servers[0]", "IP address"},
		{"efi disk without ovmf", func(a *VirtualMachineArgs) { a.EfiDisk = &VirtualMachineEfiDisk{Storage: "local-lvm"} }, "efiDisk", "ovmf"},
		{"linked clone with storage", func(a *VirtualMachineArgs) {
			a.Clone = &VirtualMachineClone{VMID: 9000, Full: ptr(false), Storage: ptr("local-lvm")}
		}, "clone.storage", "linked"},
		{"smbios uuid", func(a *VirtualMachineArgs) { a.SmbiosUUID = ptr("nope") }, "smbiosUuid", "UUID"},
	}
	for _, c := range cases {
		a := talosArgs()
		c.change(&a)
		f := validateVM(a, nil, unknowns{})
		found := false
		for _, x := range f {
			if x.Property == c.path && strings.Contains(x.Reason, c.reason) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no failure at %s mentioning %q; got %v", c.name, c.path, c.reason, f)
		}
	}
}

func TestValidateVMRefusesDiskShrink(t *testing.T) {
	t.Parallel()
	old := talosArgs()
	a := talosArgs()
	a.Disks[0].Size = 10
	f := validateVM(a, &old, unknowns{})
	if len(f) != 1 || f[0].Property != "disks[0].size" || !strings.Contains(f[0].Reason, "cannot shrink") {
		t.Fatalf("got %v", f)
	}
	a.Disks[0].Size = 30
	if f := validateVM(a, &old, unknowns{}); len(f) != 0 {
		t.Fatalf("growth refused: %v", f)
	}
}

func TestValidateVMSkipsUnknownValues(t *testing.T) {
	t.Parallel()
	a := talosArgs()
	a.Node = ""         // an output of another resource, not known in preview
	a.ISO = ptr("")     // the volumeId of a DownloadFile being created
	a.Disks[0].Size = 0 // computed
	u := unknownPaths(property.NewMap(map[string]property.Value{
		"node": property.New(property.Computed),
		"iso":  property.New(property.Computed),
		"disks": property.New(property.NewArray([]property.Value{property.New(property.NewMap(map[string]property.Value{
			"interface": property.New("scsi0"), "size": property.New(property.Computed),
		}))})),
	}))
	if f := validateVM(a, nil, u); len(f) != 0 {
		t.Fatalf("unknown values validated: %v", f)
	}
}
