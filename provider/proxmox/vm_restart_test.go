package proxmox

import (
	"strings"
	"testing"
)

func TestRestartWarning(t *testing.T) {
	t.Parallel()
	old := stateOf(talosArgs(), 104)
	old.Node = "pve1"
	cases := []struct {
		name       string
		change     func(a *VirtualMachineArgs)
		memHotplug bool
		want       []string // "" entries: no warning
	}{
		{"cores", func(a *VirtualMachineArgs) { a.CPU.Cores = ptr(8) }, false,
			[]string{"VM cp1: cpu.cores takes effect only after a restart", "will restart the VM"}},
		{"cores without reboot", func(a *VirtualMachineArgs) { a.CPU.Cores = ptr(8); a.RebootAfterUpdate = ptr(false) }, false,
			[]string{"cpu.cores", "will NOT restart the VM (rebootAfterUpdate: false)"}},
		{"memory without hotplug", func(a *VirtualMachineArgs) { a.Memory.Dedicated *= 2 }, false, []string{"memory.dedicated"}},
		{"cores and memory", func(a *VirtualMachineArgs) { a.CPU.Cores = ptr(8); a.Memory.Dedicated *= 2 }, false,
			[]string{"VM cp1: cpu.cores, memory.dedicated take effect only after a restart"}},
		{"memory with hotplug", func(a *VirtualMachineArgs) { a.Memory.Dedicated *= 2 }, true, nil},
		{"bios", func(a *VirtualMachineArgs) {
			a.Bios = ptr(Bios("ovmf"))
			a.EfiDisk = &VirtualMachineEfiDisk{Storage: "local-lvm"}
		}, false, []string{"bios"}},
		{"tags only", func(a *VirtualMachineArgs) { a.Tags = []string{"x"} }, false, nil},
		// qemu-server hot-plugs scsi and virtio disks, not sata or ide
		{"sata disk added", func(a *VirtualMachineArgs) {
			a.Disks = append(a.Disks, VirtualMachineDisk{Interface: "sata1", Storage: "local-lvm", Size: 8})
		}, false, []string{"VM cp1: disks (sata1 added) takes effect only after a restart", "will restart the VM"}},
		{"scsi disk added", func(a *VirtualMachineArgs) {
			a.Disks = append(a.Disks, VirtualMachineDisk{Interface: "scsi1", Storage: "local-lvm", Size: 8})
		}, false, nil},
		{"a replacement restarts nothing in place", func(a *VirtualMachineArgs) { a.CPU.Cores = ptr(8); a.Node = "pve2" }, false, nil},
	}
	for _, c := range cases {
		news := talosArgs()
		c.change(&news)
		got := restartWarning(old, news, func() bool { return c.memHotplug })
		if c.want == nil {
			if got != "" {
				t.Errorf("%s: unexpected warning %q", c.name, got)
			}
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: warning %q lacks %q", c.name, got, w)
			}
		}
	}
	stopped := old
	stopped.Status = "stopped"
	news := talosArgs()
	news.CPU.Cores = ptr(8)
	news.Started = ptr(false)
	if w := restartWarning(stopped, news, func() bool { return false }); w != "" {
		t.Errorf("a stopped VM restarts nothing: %q", w)
	}
	// after a failed update the VM's power state is not known: it may run
	unfinished := old
	unfinished.Status = StatusUnfinished
	news.Started = nil
	if w := restartWarning(unfinished, news, func() bool { return false }); !strings.Contains(w, "will restart the VM") {
		t.Errorf("a VM whose last update failed: warning %q", w)
	}
}
