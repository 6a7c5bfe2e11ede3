package proxmox

import (
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// A VM is unchanged only when its inputs equal its state and its live
// configuration (what a refresh would put in the state): any input that
// differs, or any drift in Proxmox, is an update that would run.
func TestUnchanged(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		inputs func(*VirtualMachineArgs)
		live   func(pve.VMConfig)
		want   bool
	}{
		{"nothing", func(*VirtualMachineArgs) {}, func(pve.VMConfig) {}, true},
		{"tags in another order", func(a *VirtualMachineArgs) { a.Tags = []string{"controlplane", "talos"} }, func(pve.VMConfig) {}, true},
		{"tags", func(a *VirtualMachineArgs) { a.Tags = []string{"talos"} }, func(pve.VMConfig) {}, false},
		{"onBoot", func(a *VirtualMachineArgs) { a.OnBoot = ptr(true) }, func(pve.VMConfig) {}, false},
		{"description", func(a *VirtualMachineArgs) { a.Description = ptr("node") }, func(pve.VMConfig) {}, false},
		{"OS disk storage", func(a *VirtualMachineArgs) { a.Disks[0].Storage = "ceph" }, func(pve.VMConfig) {}, false},
		{"cloud-init storage", func(a *VirtualMachineArgs) { a.CloudInit.Storage = "ceph" }, func(pve.VMConfig) {}, false},
		{"disk option", func(a *VirtualMachineArgs) { a.Disks[0].Discard = ptr(true) }, func(pve.VMConfig) {}, false},
		{"cores", func(a *VirtualMachineArgs) { a.CPU.Cores = ptr(4) }, func(pve.VMConfig) {}, false},
		// onBoot managed (TalosCluster sets it): a refresh sees the drift
		{"onboot set in Proxmox", func(*VirtualMachineArgs) {}, func(c pve.VMConfig) { c["onboot"] = "1" }, false},
		// not given: not managed (comparableArgs), no change either way
		{"onboot set in Proxmox, not managed", func(a *VirtualMachineArgs) { a.OnBoot = nil }, func(c pve.VMConfig) { c["onboot"] = "1" }, true},
		{"disk option dropped in Proxmox", func(*VirtualMachineArgs) {},
			func(c pve.VMConfig) { c["scsi0"] = "local-lvm:vm-104-disk-0,size=20G,ssd=1" }, false},
		{"renamed in Proxmox", func(*VirtualMachineArgs) {}, func(c pve.VMConfig) { c["name"] = "other" }, false},
		{"SMBIOS UUID in another case", func(*VirtualMachineArgs) {}, func(c pve.VMConfig) {
			c["smbios1"] = "uuid=" + strings.ToUpper(strings.TrimPrefix(c["smbios1"], "uuid="))
		}, true},
		// not an input (Proxmox chose it): a refresh stores the new one as the
		// output a ConfigurationApply's machineId is bound to
		{"SMBIOS UUID changed in Proxmox", func(*VirtualMachineArgs) {},
			func(c pve.VMConfig) { c["smbios1"] = "uuid=11111111-2222-4333-8444-555555555555" }, false},
	}
	base := func() VirtualMachineArgs {
		a := talosArgs()
		a.OnBoot = ptr(false)
		return a
	}
	for _, c := range cases {
		st := stateOf(base(), 104)
		st.OnBoot = nil
		if c.name != "onboot set in Proxmox, not managed" {
			st.OnBoot = ptr(false)
		}
		in := base()
		c.inputs(&in)
		live := liveFromCreate()
		c.live(live)
		if got := Unchanged(st, in, live); got != c.want {
			t.Errorf("%s: unchanged %v, want %v", c.name, got, c.want)
		}
	}
	if Unchanged(stateOf(base(), 104), base(), nil) {
		t.Error("a VM whose live configuration is not known is unchanged")
	}
	// the engine runs the update of a resource with init errors even when
	// Diff finds nothing; its outputs show them by the status alone
	unfinished := stateOf(base(), 104)
	unfinished.OnBoot, unfinished.Status = ptr(false), StatusUnfinished
	if Unchanged(unfinished, base(), liveFromCreate()) {
		t.Error("a VM whose last create or update failed part-way is unchanged")
	}
}
