package pve_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// connectTo connects to a lab started with a fault script in force from
// the first call.
func connectTo(t *testing.T, rules ...labpve.FaultRule) (*labpve.Server, *pve.Client, error) {
	t.Helper()
	s, c, _, err := startAndConnect(t, labpve.Options{Faults: labpve.Faults{Script: rules}})
	return s, c, err
}

// One 500 on the connection check (pveproxy restarting) is retried, so it
// no longer fails every resource of the run; a 500 that stays fails after
// a bounded number of tries, and a refused privilege is never retried.
func TestConnectRetriesTheVersionCheck(t *testing.T) {
	t.Parallel()
	s, _, err := connectTo(t, labpve.FaultRule{Call: "GET /version"})
	if err != nil || s.Calls("GET /version") != 2 {
		t.Fatalf("connect across one 500: %v after %d calls", err, s.Calls("GET /version"))
	}
	s, _, err = connectTo(t, labpve.FaultRule{Call: "GET /version", Count: -1})
	if err == nil || !strings.Contains(err.Error(), "500 lab fault injection") || s.Calls("GET /version") != 5 {
		t.Fatalf("connect against a 500 that stays: %v after %d calls, want an error after 5 (4 retries)", err, s.Calls("GET /version"))
	}
	s, _, err = connectTo(t, labpve.FaultRule{Call: "GET /version", Count: -1, Status: 403, Message: "Permission check failed (/, Sys.Audit)"})
	if err == nil || s.Calls("GET /version") != 1 {
		t.Fatalf("connect refused a privilege: %v after %d calls, want an error after 1", err, s.Calls("GET /version"))
	}
}

const startCall = "POST /nodes/{node}/qemu/{vmid}/status/start"

// A start is safe to send again once the VM is seen stopped: a 500 before
// it ran, a qmstart task that failed for a passing cause, and an answer
// lost after it ran all end with the VM running, started once.
func TestStartRetriesPassingFailures(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	for i, rules := range [][]labpve.FaultRule{
		{{Call: startCall}},
		{{Task: "qmstart"}, {Task: "qmstart", Nth: 2, Message: "start failed: command '/usr/bin/kvm -id 170' failed: got timeout"}},
		{{Call: startCall, Lost: true}},
	} {
		ref := pve.VMRef{Node: "pve1", VMID: 170 + i}
		if err := c.CreateVM(ctx, ref, map[string]any{"cores": 1}); err != nil {
			t.Fatal(err)
		}
		s.SetFaults(labpve.Faults{Script: rules})
		if err := c.StartVM(ctx, ref); err != nil {
			t.Fatalf("start with %v: %v", rules, err)
		}
		if st, err := c.VMStatus(ctx, ref); err != nil || !st.Running() {
			t.Fatalf("after start with %v: %+v %v", rules, st, err)
		}
		if got := len(s.FaultStrikes()); got != len(rules) {
			t.Fatalf("%d of the %d faults %v struck", got, len(rules), rules)
		}
	}
}

// A start that fails for a cause that stays (QEMU cannot start: a missing
// bridge, too little memory) is reported at once, not sent again.
func TestStartPermanentFailureIsNotRetried(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	ref := pve.VMRef{Node: "pve1", VMID: 175}
	if err := c.CreateVM(ctx, ref, map[string]any{"cores": 1}); err != nil {
		t.Fatal(err)
	}
	s.SetFaults(labpve.Faults{Script: []labpve.FaultRule{{Task: "qmstart", Count: -1, Message: "start failed: QEMU exited with code 1"}}})
	err := c.StartVM(ctx, ref)
	if err == nil || !strings.Contains(err.Error(), "QEMU exited with code 1") || s.Calls(startCall) != 1 {
		t.Fatalf("start that cannot succeed: %v after %d calls, want an error after 1", err, s.Calls(startCall))
	}
}

// A create or clone task that failed for a passing cause cleaned up after
// itself, so it is sent again; one that Proxmox refuses (a storage that
// does not exist) is not.
func TestCreateAndCloneRetryPassingTaskFailures(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	s.SetFaults(labpve.Faults{Script: []labpve.FaultRule{{Task: "qmcreate"}, {Task: "qmclone", Count: 2}}})
	tmpl := pve.VMRef{Node: "pve1", VMID: 180}
	if err := c.CreateVM(ctx, tmpl, map[string]any{"scsi0": "local-lvm:2", "template": 1}); err != nil {
		t.Fatalf("create across a failed qmcreate: %v", err)
	}
	clone := pve.VMRef{Node: "pve1", VMID: 181}
	if err := c.CloneVM(ctx, tmpl, clone, pve.CloneOptions{Full: true, Name: "c1"}); err != nil {
		t.Fatalf("clone across two failed qmclones: %v", err)
	}
	if vms := s.VMs(); len(vms) != 2 || vms[1].Name != "c1" || vms[1].Lock != "" {
		t.Fatalf("VMs %+v", vms)
	}
	if n := len(s.FaultStrikes()); n != 3 {
		t.Fatalf("%d faults struck, want 3", n)
	}
	s.SetFaults(labpve.Faults{})
	err := c.CreateVM(ctx, pve.VMRef{Node: "pve1", VMID: 182}, map[string]any{"scsi0": "nosuch:2"})
	if err == nil || s.Calls("POST /nodes/{node}/qemu") != 1 {
		t.Fatalf("create on a missing storage: %v after %d calls, want an error after 1", err, s.Calls("POST /nodes/{node}/qemu"))
	}
}

// A download whose answer is lost after it started is awaited, not sent a
// second time; one whose network failed is sent again.
func TestDownloadRetries(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{TimeScale: 0.2})
	const call = "POST /nodes/{node}/storage/{storage}/download-url"
	s.SetFaults(labpve.Faults{Script: []labpve.FaultRule{{Call: call, Lost: true}, {Task: "download", Nth: 2}}})
	for _, name := range []string{"a.iso", "b.iso"} {
		r := pve.DownloadRequest{Node: "pve1", Storage: "local", URL: "https://images.lab.example/" + name, Content: "iso", FileName: name}
		if err := c.DownloadURL(ctx, r); err != nil {
			t.Fatalf("download %s: %v", name, err)
		}
		if _, found, err := c.FindVolume(ctx, "pve1", "local", r.VolumeID()); err != nil || !found {
			t.Fatalf("%s after the download: found %v, %v", name, found, err)
		}
	}
	downloads := 0
	for _, task := range s.Tasks() {
		if task.Type == "download" {
			downloads++
		}
	}
	if downloads != 3 || s.Calls(call) != 3 {
		t.Fatalf("%d download tasks from %d calls, want 3 and 3 (a.iso once, b.iso twice)", downloads, s.Calls(call))
	}
}

// A volume delete that failed with a 500 before it ran is sent again once
// the content list shows the volume still there; one whose answer was lost
// after it ran is not sent again. A delete Proxmox refuses is not retried.
func TestDeleteVolumeRetries(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	const call = "DELETE /nodes/{node}/storage/{storage}/content/{volume}"
	for i, rule := range []labpve.FaultRule{{Call: call}, {Call: call, Lost: true}, {Call: call, Status: 403, Message: "Permission check failed"}} {
		r := pve.DownloadRequest{Node: "pve1", Storage: "local", URL: "https://images.lab.example/a.iso", Content: "iso", FileName: fmt.Sprintf("v%d.iso", i)}
		if err := c.DownloadURL(ctx, r); err != nil {
			t.Fatal(err)
		}
		s.SetFaults(labpve.Faults{Script: []labpve.FaultRule{rule}}) // counts calls from here
		before := s.Calls(call)
		err := c.DeleteVolume(ctx, "pve1", "local", r.VolumeID())
		_, found, ferr := c.FindVolume(ctx, "pve1", "local", r.VolumeID())
		calls := s.Calls(call) - before
		switch {
		case ferr != nil:
			t.Fatal(ferr)
		case rule.Status == 403:
			if err == nil || !found || calls != 1 {
				t.Errorf("refused delete: %v, found %v after %d calls, want an error after 1", err, found, calls)
			}
		case err != nil || found || calls != 2-boolInt(rule.Lost):
			t.Errorf("delete across %v: %v, found %v after %d calls", rule, err, found, calls)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
