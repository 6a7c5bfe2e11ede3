package proxmox_test

import (
	"crypto/tls"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// The Image Factory's nocloud disk image with the qemu-guest-agent extension.
const (
	qgaSchematic   = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	talosDiskImage = "https://factory.talos.dev/image/" + qgaSchematic + "/v1.12.5/nocloud-amd64.qcow2"
)

func diskImageInputs(node string) property.Map {
	return property.NewMap(map[string]property.Value{
		"node":     str(node),
		"storage":  str("local"),
		"url":      str(talosDiskImage),
		"content":  str("import"),
		"fileName": str("talos-v1.12.5-nocloud-amd64.qcow2"),
	})
}

// imageVM is a VM whose only disk is imported from volume.
func imageVM(node, name, volume string, size int) map[string]property.Value {
	return map[string]property.Value{
		"node":         str(node),
		"name":         str(name),
		"osType":       str("l26"),
		"memory":       obj(map[string]property.Value{"dedicated": num(2048)}),
		"scsiHardware": str("virtio-scsi-single"),
		"disks": arr(obj(map[string]property.Value{
			"interface": str("scsi0"), "storage": str("local-lvm"), "size": num(size), "importFrom": str(volume),
		})),
		"networkDevices": arr(obj(map[string]property.Value{"bridge": str("vmbr0")})),
	}
}

func failureAt(f []p.CheckFailure, path, text string) bool {
	for _, x := range f {
		if x.Property == path && strings.Contains(x.Reason, text) {
			return true
		}
	}
	return false
}

// A Talos disk image from the Image Factory becomes a VM's system disk, the
// VM becomes a template in place, and linked and full clones of it boot
// Talos (maintenance mode on their cloud-init address).
func TestVirtualMachineFromDiskImageAndTemplate(t *testing.T) {
	t.Parallel()
	e := newTalosEnv(t)

	dlID, dl := e.create(downloadType, "talos-disk", diskImageInputs("pve1"))
	volume := dl.Get("volumeId").AsString()
	if volume != "local:import/talos-v1.12.5-nocloud-amd64.qcow2" {
		t.Fatalf("volumeId %q", volume)
	}

	// bad sources fail at preview
	missing := imageVM("pve1", "x", "local:import/nope.qcow2", 8)
	if f := e.checkFailures(vmType, "x", property.Map{}, property.NewMap(missing)); !failureAt(f, "disks[0].importFrom", "does not exist on node pve1") {
		t.Errorf("a missing image: %v", f)
	}
	otherNode := imageVM("pve2", "x", volume, 8)
	if f := e.checkFailures(vmType, "x", property.Map{}, property.NewMap(otherNode)); !failureAt(f, "disks[0].importFrom", "does not exist on node pve2") {
		t.Errorf("an image on another node's local storage: %v", f)
	}

	// the qcow2 file is smaller than the 1246 MiB disk it holds, which does
	// not fit 1 GiB
	tooSmall := imageVM("pve1", "x", volume, 1)
	if f := e.checkFailures(vmType, "x", property.Map{}, property.NewMap(tooSmall)); !failureAt(f, "disks[0].size", "holds a disk of 1.22 GiB") ||
		!failureAt(f, "disks[0].size", "Set size to 2 or more") {
		t.Errorf("a 1246 MiB image into a 1 GiB disk: %v", f)
	}

	// a VM booting the imported image; the disk grows to 8 GiB
	goldenIn := property.NewMap(imageVM("pve1", "talos-golden", volume, 8))
	goldenID, golden := e.create(vmType, "golden", goldenIn)
	gid := getNum(t, golden, "vmId")
	cur, _, _ := e.lab.VMConfig(gid)
	if !strings.Contains(cur["scsi0"], "size=8G") || cur["boot"] != "order=scsi0" || golden.Get("status").AsString() != "running" {
		t.Fatalf("golden VM: config %v status %s", cur, golden.Get("status").AsString())
	}
	if d := e.diff(vmType, "golden", goldenID, golden, goldenIn, goldenIn); d.HasChanges {
		t.Fatalf("second diff not empty: %v", diffKinds(d))
	}
	rd := e.read(vmType, "golden", goldenID, golden, goldenIn)
	if d := e.diff(vmType, "golden", goldenID, rd.Properties, rd.Inputs, goldenIn); d.HasChanges {
		t.Fatalf("diff after refresh not empty: %v", diffKinds(d))
	}

	// it becomes a template in place: shut down, disks turned into base volumes
	tmplIn := goldenIn.Set("template", boolean(true))
	d := e.diff(vmType, "golden", goldenID, rd.Properties, rd.Inputs, tmplIn)
	if hasReplace(d) || d.DetailedDiff["template"].Kind != p.Add {
		t.Fatalf("template: true is not an in-place change: %v", diffKinds(d))
	}
	tmpl := e.update(vmType, "golden", goldenID, rd.Properties, rd.Inputs, tmplIn)
	cur, _, _ = e.lab.VMConfig(gid)
	if cur["template"] != "1" || !strings.Contains(cur["scsi0"], "base-"+strconv.Itoa(gid)+"-disk-0") || tmpl.Get("status").AsString() != "stopped" {
		t.Fatalf("after template: true: config %v status %s", cur, tmpl.Get("status").AsString())
	}
	if getNum(t, tmpl, "vmId") != gid {
		t.Fatal("the VM was replaced")
	}
	if d := e.diff(vmType, "golden", goldenID, tmpl, tmplIn, tmplIn); d.HasChanges {
		t.Fatalf("diff after the conversion not empty: %v", diffKinds(d))
	}
	rd = e.read(vmType, "golden", goldenID, tmpl, tmplIn)
	if d := e.diff(vmType, "golden", goldenID, rd.Properties, rd.Inputs, tmplIn); d.HasChanges {
		t.Fatalf("diff after refresh of the template not empty: %v", diffKinds(d))
	}

	// a linked clone boots Talos from the template's disk image; the guest
	// agent of the qemu-guest-agent extension reports its address
	addr := e.lab.AddressBlock().Addr().As4()
	addr[3] = 41
	ip := net.IP(addr[:]).String()
	cpIn := property.NewMap(map[string]property.Value{
		"node":  str("pve1"),
		"name":  str("cp1"),
		"clone": obj(map[string]property.Value{"vmId": num(gid), "full": boolean(false)}),
		"cloudInit": obj(map[string]property.Value{
			"storage":   str("local-lvm"),
			"ipConfigs": arr(obj(map[string]property.Value{"ipv4": obj(map[string]property.Value{"address": str(ip + "/24")})})),
		}),
		"agent": obj(map[string]property.Value{"enabled": boolean(true), "timeout": num(60)}),
	})
	cpID, cp := e.create(vmType, "cp1", cpIn)
	cpid := getNum(t, cp, "vmId")
	if got := getStrings(cp, "ipv4Addresses"); !slices.Equal(got, []string{ip}) {
		t.Errorf("ipv4Addresses %v, want [%s]", got, ip)
	}
	cur, _, _ = e.lab.VMConfig(cpid)
	if !strings.Contains(cur["scsi0"], "base-"+strconv.Itoa(gid)+"-disk-0/vm-"+strconv.Itoa(cpid)+"-disk-0") {
		t.Errorf("linked clone's disk %q", cur["scsi0"])
	}
	// Talos in maintenance mode serves its API with a self-signed certificate
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(ip, "50000"),
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // maintenance mode has no certificate to verify
	if err != nil {
		t.Errorf("no Talos API on %s: %v", ip, err)
	} else {
		conn.Close()
	}
	if d := e.diff(vmType, "cp1", cpID, cp, cpIn, cpIn); d.HasChanges {
		t.Fatalf("clone's second diff not empty: %v", diffKinds(d))
	}

	// a full clone whose disk grows past the image's size
	fullIn := property.NewMap(map[string]property.Value{
		"node":    str("pve1"),
		"name":    str("w1"),
		"clone":   obj(map[string]property.Value{"vmId": num(gid)}),
		"disks":   arr(obj(map[string]property.Value{"interface": str("scsi0"), "storage": str("local-lvm"), "size": num(12)})),
		"started": boolean(false),
	})
	fullID, full := e.create(vmType, "w1", fullIn)
	cur, _, _ = e.lab.VMConfig(getNum(t, full, "vmId"))
	if !strings.Contains(cur["scsi0"], "size=12G") || strings.Contains(cur["scsi0"], "base-") {
		t.Errorf("full clone's disk %q", cur["scsi0"])
	}

	// a second disk imported into the existing VM, then grown to its size
	fullIn2 := fullIn.Set("disks", arr(
		obj(map[string]property.Value{"interface": str("scsi0"), "storage": str("local-lvm"), "size": num(12)}),
		obj(map[string]property.Value{"interface": str("scsi1"), "storage": str("local-lvm"), "size": num(2), "importFrom": str(volume)}),
	))
	d = e.diff(vmType, "w1", fullID, full, fullIn, fullIn2)
	if want := map[string]p.DiffKind{"disks[1]": p.Add}; !equalKinds(diffKinds(d), want) {
		t.Fatalf("adding an imported disk: %v, want %v", diffKinds(d), want)
	}
	full = e.update(vmType, "w1", fullID, full, fullIn, fullIn2)
	cur, _, _ = e.lab.VMConfig(getNum(t, full, "vmId"))
	if !strings.Contains(cur["scsi1"], "size=2G") {
		t.Errorf("imported second disk %q, want 2 GiB", cur["scsi1"])
	}
	if d := e.diff(vmType, "w1", fullID, full, fullIn2, fullIn2); d.HasChanges {
		t.Fatalf("diff after adding the disk not empty: %v", diffKinds(d))
	}

	// importing another VM's disk into a smaller disk cannot work
	baseDisk := "local-lvm:base-" + strconv.Itoa(gid) + "-disk-0"
	small := imageVM("pve1", "small", baseDisk, 4)
	if f := e.checkFailures(vmType, "small", property.Map{}, property.NewMap(small)); !failureAt(f, "disks[0].size", "holds a disk of 8 GiB") {
		t.Errorf("an 8 GiB source into a 4 GiB disk: %v", f)
	}

	// a template cannot turn back into a VM: replaced
	d = e.diff(vmType, "golden", goldenID, rd.Properties, rd.Inputs, goldenIn.Set("template", boolean(false)))
	if d.DetailedDiff["template"].Kind != p.UpdateReplace {
		t.Errorf("template: false: %v", diffKinds(d))
	}

	// the template cannot go before its linked clone
	err = e.s.Delete(p.DeleteRequest{Urn: urn(vmType, "golden"), ID: goldenID, Properties: rd.Properties})
	if err == nil || !strings.Contains(err.Error(), "linked clones still use its disks: destroy those VMs first") {
		t.Errorf("deleting a template with a linked clone: %v", err)
	}
	e.delete(vmType, "w1", fullID, full)
	e.delete(vmType, "cp1", cpID, cp)
	e.delete(vmType, "golden", goldenID, rd.Properties)
	e.requireNoVMs()
	e.delete(downloadType, "talos-disk", dlID, dl)
}
