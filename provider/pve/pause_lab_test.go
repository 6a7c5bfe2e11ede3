package pve_test

import (
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

const resumeCall = "POST /nodes/{node}/qemu/{vmid}/status/resume"

// A VM paused in Proxmox runs as far as qemu goes (status "running") but
// is Paused; ResumeVM continues it, also when its first answer was lost
// after it ran, and the inventory says "paused" for it until then.
func TestResumePausedVM(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	ref := pve.VMRef{Node: "pve1", VMID: 180}
	if err := c.CreateVM(ctx, ref, map[string]any{"cores": 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.StartVM(ctx, ref); err != nil {
		t.Fatal(err)
	}
	for _, rules := range [][]labpve.FaultRule{nil, {{Call: resumeCall, Lost: true}}} {
		if err := s.PauseVM(ref.VMID); err != nil {
			t.Fatal(err)
		}
		st, err := c.VMStatus(ctx, ref)
		if err != nil || !st.Running() || !st.Paused() {
			t.Fatalf("paused VM: %+v %v, want running and paused", st, err)
		}
		inv, err := c.Inventory(ctx, 0)
		if g, ok := inv.Guest(ref.VMID); err != nil || !ok || g.Status != "paused" {
			t.Fatalf("the inventory has %+v for the paused VM (%v)", g, err)
		}
		s.SetFaults(labpve.Faults{Script: rules})
		before := s.Calls(resumeCall)
		if err := c.ResumeVM(ctx, ref); err != nil {
			t.Fatalf("resume with %v: %v", rules, err)
		}
		if st, err := c.VMStatus(ctx, ref); err != nil || st.Paused() || !st.Running() {
			t.Fatalf("after resume with %v: %+v %v", rules, st, err)
		}
		if got := s.Calls(resumeCall) - before; got != 1 {
			t.Fatalf("resume with %v: %d calls, want 1 (a VM seen resumed is not resumed again)", rules, got)
		}
		if got := len(s.FaultStrikes()); got != len(rules) {
			t.Fatalf("%d of the faults %v struck", got, rules)
		}
	}
}
