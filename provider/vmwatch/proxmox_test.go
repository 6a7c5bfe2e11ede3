package vmwatch

import (
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

func TestLookIn(t *testing.T) {
	at := time.Now()
	inv := pve.Inventory{
		Guests: []pve.ClusterVM{
			{VMID: 100, Type: "qemu", Node: "pve1", Status: "running"},
			{VMID: 101, Type: "qemu", Node: "pve2", Status: "stopped", Lock: "backup"},
			{VMID: 102, Type: "qemu", Node: "pve3", Status: "unknown"},
			{VMID: 103, Type: "qemu", Node: "pve1", Status: "paused"},
			{VMID: 104, Type: "lxc", Node: "pve1", Status: "running"},
			{VMID: 105, Type: "qemu", Node: "pve1", Status: "prelaunch"},
			{VMID: 106, Type: "qemu", Node: "pve2", Status: "stopped", HAState: "recovery"},
		},
		Offline: map[string]bool{"pve3": true},
		Uptime:  map[string]time.Duration{"pve1": time.Hour, "pve2": time.Minute},
	}
	for vmid, want := range map[int]Look{
		100: {At: at, State: "running", Host: "pve1", HostUptime: time.Hour},
		101: {At: at, State: "stopped", Host: "pve2", Lock: "backup", HostUptime: time.Minute},
		102: {At: at, Host: "pve3"}, // its host is off: unknown
		103: {At: at, State: "paused", Host: "pve1", HostUptime: time.Hour},
		104: {At: at, State: "gone"},                       // a container took the id: not the VM
		105: {At: at, Host: "pve1", HostUptime: time.Hour}, // a state we do not judge
		106: {At: at, State: "stopped", Host: "pve2", HAState: "recovery", HostUptime: time.Minute},
		199: {At: at, State: "gone"},
	} {
		if got := lookIn(inv, vmid, at); got != want {
			t.Errorf("VM %d: %+v, want %+v", vmid, got, want)
		}
	}
}
