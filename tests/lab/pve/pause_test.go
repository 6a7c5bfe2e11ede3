package pve

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

// pausingGuest records what QEMU did to its vCPUs.
type pausingGuest struct {
	recordingGuest
	mu     sync.Mutex
	events []string
}

func (g *pausingGuest) Pause()  { g.record("pause") }
func (g *pausingGuest) Resume() { g.record("resume") }

func (g *pausingGuest) record(e string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, e)
}

func (g *pausingGuest) seen() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.events, ",")
}

// TestPauseAndResume: status/suspend pauses a running VM as PVE does
// (qemu-server API2/Qemu.pm vm_suspend, vm_resume, vm_shutdown, vm_reboot):
// status/current keeps status "running" with qmpstatus "paused",
// /cluster/resources says "paused", the agent times out, a shutdown is
// refused unless forceStop (then qemu is stopped), and resume continues
// the guest; a stopped VM can be neither paused nor resumed.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var guests []*pausingGuest
	booter := func(_ context.Context, vm BootInfo, _ Host) Guest {
		g := &pausingGuest{recordingGuest: recordingGuest{info: vm}}
		mu.Lock()
		guests = append(guests, g)
		mu.Unlock()
		return g
	}
	s, c := startLab(t, Options{Booter: booter})
	ctx := ctxT(t)
	createStarted(t, ctx, c, 100, opt("name", "a"), opt("agent", "enabled=1"), opt("scsi0", "local-lvm:4"))
	createVMs(t, c, []proxmox.VirtualMachineOption{opt("name", "b")}, 101)
	tok := s.APIToken()
	post := func(path string, form url.Values) (string, any) {
		t.Helper()
		return apiCall(t, s, tok, "POST", "/nodes/pve1/qemu/"+path, form)
	}
	status := func(vmid string) map[string]any {
		t.Helper()
		_, st := apiCall(t, s, tok, "GET", "/nodes/pve1/qemu/"+vmid+"/status/current", nil)
		return st.(map[string]any)
	}
	resource := func(vmid float64) string {
		t.Helper()
		_, list := apiCall(t, s, tok, "GET", "/cluster/resources?type=vm", nil)
		for _, it := range list.([]any) {
			if m := it.(map[string]any); m["vmid"] == vmid {
				return m["status"].(string)
			}
		}
		t.Fatalf("VM %v not in /cluster/resources", vmid)
		return ""
	}

	if line, _ := post("101/status/suspend", nil); !strings.Contains(line, "VM 101 not running") {
		t.Errorf("suspend of a stopped VM: %q", line)
	}
	if line, _ := post("101/status/resume", nil); !strings.Contains(line, "VM 101 not running") {
		t.Errorf("resume of a stopped VM: %q", line)
	}
	if line, _ := post("100/status/suspend", url.Values{"todisk": {"1"}}); !strings.Contains(line, "not simulated") {
		t.Errorf("suspend to disk: %q", line)
	}

	_, upid := post("100/status/suspend", nil)
	if !strings.Contains(upid.(string), ":qmpause:100:") || taskEnd(t, s, upid) != "OK" {
		t.Fatalf("suspend: task %v", upid)
	}
	if st := status("100"); st["status"] != "running" || st["qmpstatus"] != "paused" {
		t.Errorf("paused VM: status %v qmpstatus %v", st["status"], st["qmpstatus"])
	}
	if r := resource(100); r != "paused" {
		t.Errorf("/cluster/resources says %q for the paused VM", r)
	}
	if vms := s.VMs(); vms[0].Status != "paused" {
		t.Errorf("VMs(): %+v", vms[0])
	}
	if line, _ := apiCall(t, s, tok, "GET", "/nodes/pve1/qemu/100/agent/network-get-interfaces", nil); !strings.Contains(line, "VM 100 qmp command 'guest-network-get-interfaces' failed - got timeout") {
		t.Errorf("agent of a paused VM: %q", line)
	}
	for _, cmd := range []string{"shutdown", "reboot"} {
		if line, _ := post("100/status/"+cmd, nil); !strings.Contains(line, "VM is paused - cannot shutdown") {
			t.Errorf("%s of a paused VM: %q", cmd, line)
		}
	}
	if _, upid := post("100/status/start", nil); taskEnd(t, s, upid) != "VM 100 already running" {
		t.Errorf("start of a paused VM ended OK")
	}

	_, upid = post("100/status/resume", nil)
	if !strings.Contains(upid.(string), ":qmresume:100:") || taskEnd(t, s, upid) != "OK" {
		t.Fatalf("resume: task %v", upid)
	}
	if st := status("100"); st["qmpstatus"] != "running" || resource(100) != "running" {
		t.Errorf("resumed VM: qmpstatus %v, resources %q", st["qmpstatus"], resource(100))
	}
	if _, upid := post("100/status/resume", nil); taskEnd(t, s, upid) != "OK" {
		t.Errorf("resume of a running VM failed")
	}

	// Paused out of band, then stopped by a forced shutdown.
	if err := s.PauseVM(100); err != nil {
		t.Fatal(err)
	}
	if _, upid := post("100/status/shutdown", url.Values{"forceStop": {"1"}}); taskEnd(t, s, upid) != "WARNINGS: 1" {
		t.Errorf("forced shutdown of a paused VM did not warn and stop")
	}
	if st := status("100"); st["status"] != "stopped" || st["qmpstatus"] != "stopped" {
		t.Errorf("after the forced shutdown: %v %v", st["status"], st["qmpstatus"])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(guests) != 1 || guests[0].seen() != "pause,resume,pause" {
		t.Errorf("the guest saw %d boots and %q", len(guests), guests[0].seen())
	}
}
