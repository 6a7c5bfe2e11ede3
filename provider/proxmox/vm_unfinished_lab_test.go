package proxmox_test

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// An update that changed the VM and then failed (here its restart, for a
// token without VM.PowerMgmt: the changed cores stay pending) stores the
// status "unknown". The engine keeps the error (an init error) and runs
// the next update even when Diff finds nothing; the stack's outputs,
// which TalosCluster reads to decide which nodes an update leaves alone
// (proxmox.Unchanged), show it only by that status (review s14b S1).
func TestPartlyFailedUpdateStoresStatusUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	olds := property.NewMap(plainVM("pve1", "half"))
	id, st := e.create(vmType, "half", olds)
	if st.Get("status").AsString() != "running" {
		t.Fatalf("created VM status %v", st.Get("status"))
	}
	in := plainVM("pve1", "half")
	in["cpu"] = obj(map[string]property.Value{"cores": num(2)})
	checked := e.check(vmType, "half", olds, property.NewMap(in))
	// pve-manager answers a missing privilege with 403 "Permission check
	// failed (/vms/<vmid>, VM.PowerMgmt)" (PVE/RPCEnvironment.pm check)
	e.lab.SetFaults(labpve.Faults{Script: []labpve.FaultRule{{Call: "POST /nodes/{node}/qemu/{vmid}/status/shutdown",
		Status: 403, Message: "Permission check failed (/vms/" + strings.TrimPrefix(id, "pve1/") + ", VM.PowerMgmt)"}}})
	resp, err := e.s.Update(p.UpdateRequest{Urn: urn(vmType, "half"), ID: id, State: st, OldInputs: olds, Inputs: checked})
	if err == nil || resp.PartialState == nil {
		t.Fatalf("update with the restart refused: err %v, partial %v", err, resp.PartialState)
	}
	if got := resp.Properties.Get("status"); !got.IsString() || got.AsString() != "unknown" {
		t.Errorf("a partly failed update stores status %v, want unknown", got)
	}
	if got := resp.Properties.Get("cpu").AsMap().Get("cores"); !got.IsNumber() || got.AsNumber() != 2 {
		t.Errorf("the partial state does not record the changed cores: %v", got)
	}
}
