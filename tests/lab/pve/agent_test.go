package pve

import (
	"context"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// download fetches url into storage local of node pve1 and waits for it.
func download(t *testing.T, ctx context.Context, c *proxmox.Client, content, filename, url string) {
	t.Helper()
	node, _ := c.Node(ctx, "pve1")
	upid, err := node.StorageDownloadURL(ctx, &proxmox.StorageDownloadURLOptions{Node: "pve1", Storage: "local", Content: content, Filename: filename, URL: url})
	if err != nil {
		t.Fatalf("download-url %s: %v", url, err)
	}
	waitOK(t, ctx, proxmox.NewTask(proxmox.UPID(upid), c))
}

// createStarted creates a VM on pve1 from the options and starts it.
func createStarted(t *testing.T, ctx context.Context, c *proxmox.Client, vmid int, opts ...proxmox.VirtualMachineOption) *proxmox.VirtualMachine {
	t.Helper()
	node, _ := c.Node(ctx, "pve1")
	task, err := node.NewVirtualMachine(ctx, vmid, opts...)
	if err != nil {
		t.Fatalf("create %d: %v", vmid, err)
	}
	waitOK(t, ctx, task)
	vm, err := node.VirtualMachine(ctx, vmid)
	if err != nil {
		t.Fatal(err)
	}
	task, err = vm.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	return vm
}

func TestGuestAgentRules(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{Booter: BasicBooter})
	ctx := ctxT(t)
	download(t, ctx, c, "import", "with-agent.raw", "https://images.example/os.raw?qemu-guest-agent=1")
	download(t, ctx, c, "import", "no-agent.raw", "https://images.example/os.raw")

	withAgent := []proxmox.VirtualMachineOption{
		opt("scsi0", "local-lvm:0,import-from=local:import/with-agent.raw"), opt("net0", "virtio,bridge=vmbr0"),
		opt("ide2", "local-lvm:cloudinit"), opt("ipconfig0", "ip=127.10.20.5/24,gw=127.10.20.1"), opt("name", "node-a"),
	}
	// agent enabled, guest runs an agent: it answers.
	a := createStarted(t, ctx, c, 100, append(withAgent, opt("agent", "1"))...)
	if err := a.WaitForAgent(ctx, 5); err != nil {
		t.Fatalf("WaitForAgent: %v", err)
	}
	info, err := a.AgentOsInfo(ctx)
	if err != nil || info.ID != "lablinux" {
		t.Fatalf("osinfo: %v %+v", err, info)
	}
	if err := a.AgentPing(ctx); err != nil {
		t.Fatal(err)
	}
	host, err := a.AgentGetHostName(ctx)
	if err != nil || host != "node-a" {
		t.Fatalf("hostname %q %v", host, err)
	}
	ifaces, err := a.AgentGetNetworkIFaces(ctx)
	if err != nil || len(ifaces) != 1 {
		t.Fatalf("interfaces: %v %+v", err, ifaces)
	}
	mac := strings.ToLower(strings.TrimPrefix(strings.Split(a.VirtualMachineConfig.Nets["net0"], ",")[0], "virtio="))
	if ifaces[0].HardwareAddress != mac || len(ifaces[0].IPAddresses) != 1 || ifaces[0].IPAddresses[0].IPAddress != "127.10.20.5" || ifaces[0].IPAddresses[0].Prefix != 24 {
		t.Fatalf("interface %+v, mac %s", ifaces[0], mac)
	}
	if st, _ := rawCall(t, s, "GET", "/nodes/pve1/qemu/100/status/current", "", nil); st != "200 OK" {
		t.Fatal(st)
	}

	// agent disabled: qemu has no agent channel.
	b := createStarted(t, ctx, c, 101, append(withAgent, opt("agent", "0"))...)
	_, err = b.AgentOsInfo(ctx)
	mustContain(t, err, "500 QEMU guest agent is not running")

	// no agent key at all.
	cc := createStarted(t, ctx, c, 102, withAgent...)
	mustContain(t, cc.AgentPing(ctx), "500 No QEMU guest agent configured")

	// agent enabled, but the guest OS has none.
	d := createStarted(t, ctx, c, 103, opt("scsi0", "local-lvm:0,import-from=local:import/no-agent.raw"), opt("agent", "1"))
	mustContain(t, d.AgentPing(ctx), "500 QEMU guest agent is not running")

	// Enabling the agent on a running VM is pending until a restart.
	task, _ := b.Config(ctx, opt("agent", "1"))
	waitOK(t, ctx, task)
	mustContain(t, b.AgentPing(ctx), "QEMU guest agent is not running")
	task, _ = b.Reboot(ctx)
	waitOK(t, ctx, task)
	if err := b.AgentPing(ctx); err != nil {
		t.Fatalf("after reboot: %v", err)
	}

	// A stopped VM.
	task, _ = a.Stop(ctx)
	waitOK(t, ctx, task)
	mustContain(t, a.AgentPing(ctx), "500 VM 100 is not running")
}

func TestAgentDelayFault(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{Booter: BasicBooter, Faults: Faults{AgentDelay: 300 * time.Millisecond}})
	ctx := ctxT(t)
	download(t, ctx, c, "iso", "os.iso", "https://images.example/os.iso?agent=1")
	vm := createStarted(t, ctx, c, 100, opt("ide2", "local:iso/os.iso,media=cdrom"), opt("agent", "1"))
	mustContain(t, vm.AgentPing(ctx), "QEMU guest agent is not running")
	time.Sleep(350 * time.Millisecond)
	if err := vm.AgentPing(ctx); err != nil {
		t.Fatalf("after the delay: %v", err)
	}
	s.SetFaults(Faults{})
}

// recordingGuest checks what a guest learns at boot and that what it
// writes to its disk persists.
type recordingGuest struct {
	info BootInfo
}

func (g *recordingGuest) PowerOff()                          {}
func (g *recordingGuest) Shutdown(ctx context.Context) error { return nil }
func (g *recordingGuest) Agent() (AgentInfo, bool)           { return AgentInfo{Hostname: g.info.Name}, true }

func TestGuestHook(t *testing.T) {
	t.Parallel()
	boots := make(chan BootInfo, 10)
	booter := func(ctx context.Context, vm BootInfo, disks Host) Guest {
		boots <- vm
		if vm.CDROM != nil {
			// "install" onto the first hard disk.
			for _, d := range vm.Disks {
				if d.Media == "disk" {
					if err := disks.WriteImage(d.Volume, Image{Volume: d.Volume, SourceURL: vm.CDROM.SourceURL, Written: "installed-os:v1"}); err != nil {
						t.Errorf("WriteImage: %v", err)
					}
					break
				}
			}
		}
		if err := disks.WriteImage("local:iso/talos.iso", Image{Written: "x"}); err == nil {
			t.Error("a guest could write to an ISO")
		}
		return &recordingGuest{info: vm}
	}
	s, c := startLab(t, Options{Booter: booter})
	ctx := ctxT(t)
	download(t, ctx, c, "iso", "talos.iso", "https://factory.talos.dev/image/abc/v1.12.0/nocloud-amd64.iso")
	vm := createStarted(t, ctx, c, 100,
		opt("scsi0", "local-lvm:10,ssd=1,discard=on"), opt("ide0", "local:iso/talos.iso,media=cdrom"), opt("ide2", "local-lvm:cloudinit"),
		opt("net0", "virtio,bridge=vmbr0,tag=20"), opt("ipconfig0", "ip=127.7.7.7/24,gw=127.7.7.1"), opt("nameserver", "1.1.1.1"),
		opt("searchdomain", "lab.example"), opt("agent", "enabled=1"), opt("memory", "2048"), opt("cores", 2), opt("name", "cp1"),
		opt("boot", "order=scsi0;ide0"), opt("smbios1", "uuid=11111111-2222-4333-8444-555555555555"))
	b := <-boots
	if b.Node != "pve1" || b.VMID != 100 || b.Name != "cp1" || b.SMBIOSUUID != "11111111-2222-4333-8444-555555555555" || !b.AgentEnabled || b.MemoryMiB != 2048 || b.Cores != 2 {
		t.Fatalf("boot info: %+v", b)
	}
	if b.CDROM == nil || b.CDROM.SourceURL != "https://factory.talos.dev/image/abc/v1.12.0/nocloud-amd64.iso" || strings.Join(b.BootOrder, ";") != "scsi0;ide0" {
		t.Fatalf("cdrom/boot: %+v %v", b.CDROM, b.BootOrder)
	}
	if len(b.NICs) != 1 || b.NICs[0].Bridge != "vmbr0" || b.NICs[0].Tag != 20 || !strings.HasPrefix(b.NICs[0].MAC, "BC:24:11:") {
		t.Fatalf("nics: %+v", b.NICs)
	}
	ci := b.CloudInit
	if ci == nil || ci.Hostname != "cp1" || ci.IPConfigs["net0"].IP != "127.7.7.7/24" || ci.IPConfigs["net0"].Gateway != "127.7.7.1" || strings.Join(ci.Nameservers, ",") != "1.1.1.1" {
		t.Fatalf("cloud-init: %+v", ci)
	}
	wantNet := "version: 1\nconfig:\n    - type: physical\n      name: eth0\n      mac_address: '" + strings.ToLower(b.NICs[0].MAC) + "'\n      subnets:\n      - type: static\n        address: '127.7.7.7'\n        netmask: '255.255.255.0'\n        gateway: '127.7.7.1'\n    - type: nameserver\n      address:\n      - '1.1.1.1'\n      search:\n      - 'lab.example'\n"
	if ci.NetworkData != wantNet {
		t.Fatalf("network-config:\n%s\nwant:\n%s", ci.NetworkData, wantNet)
	}
	if !strings.Contains(ci.UserData, "hostname: cp1\n") || !strings.Contains(ci.UserData, "fqdn: cp1.lab.example\n") {
		t.Fatalf("user-data: %s", ci.UserData)
	}
	// The installed image survives stop/start and is copied by a clone.
	task, _ := vm.Stop(ctx)
	waitOK(t, ctx, task)
	task, _ = vm.Start(ctx)
	waitOK(t, ctx, task)
	b2 := <-boots
	var ifaces []string
	var scsi0 Disk
	for _, d := range b2.Disks {
		ifaces = append(ifaces, d.Interface)
		if d.Interface == "scsi0" {
			scsi0 = d
		}
	}
	if strings.Join(ifaces, ",") != "ide0,ide2,scsi0" || scsi0.Image.Written != "installed-os:v1" || scsi0.SizeBytes != 10<<30 || !scsi0.SSD || scsi0.Options["discard"] != "on" {
		t.Fatalf("disks after restart: %+v", b2.Disks)
	}
	task, _ = vm.Stop(ctx)
	waitOK(t, ctx, task)
	_, task, err := vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101, Full: true, Name: "cp2"})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	var clonedDisk *VolumeInfo
	for _, v := range s.Volumes("pve1", "local-lvm") {
		if v.VolID == "local-lvm:vm-101-disk-0" {
			v := v
			clonedDisk = &v
		}
	}
	if clonedDisk == nil || clonedDisk.Image.Written != "installed-os:v1" || clonedDisk.Image.SourceURL == "" {
		t.Fatalf("cloned disk: %+v (all: %+v)", clonedDisk, s.Volumes("pve1", "local-lvm"))
	}
	// Destroying the VM destroys what its disks held.
	task, _ = vm.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true})
	waitOK(t, ctx, task)
	for _, v := range s.Volumes("pve1", "local-lvm") {
		if v.Owner == 100 {
			t.Fatalf("volume of destroyed VM left: %+v", v)
		}
	}
}

// TestGuestPowersOff: a guest that turns itself off stops the VM; a guest
// replaced by a later boot cannot stop the new one.
func TestGuestPowersOff(t *testing.T) {
	t.Parallel()
	hosts := make(chan Host, 4)
	booter := func(ctx context.Context, vm BootInfo, host Host) Guest {
		hosts <- host
		return &recordingGuest{info: vm}
	}
	s, c := startLab(t, Options{Booter: booter})
	ctx := ctxT(t)
	vm := createStarted(t, ctx, c, 100, opt("memory", "1024"))
	first := <-hosts
	first.PoweredOff()
	if err := vm.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if vm.Status != "stopped" {
		t.Fatalf("status after guest power-off: %s", vm.Status)
	}
	if _, used := s.NodeMemory("pve1"); used != hostReservedMiB {
		t.Fatalf("memory still accounted: %d", used)
	}
	task, _ := vm.Start(ctx)
	waitOK(t, ctx, task)
	<-hosts
	first.PoweredOff() // stale: from the previous boot
	if err := vm.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if vm.Status != "running" {
		t.Fatalf("a stale guest stopped the VM: %s", vm.Status)
	}
}
