package proxmox_test

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// Two stacks (here: two resource names) download the same content-named
// file with shared: true. The second uses the first's file; a delete keeps
// the file while a VM boots from it, and the last delete removes it.
func TestDownloadFileShared(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := isoInputs("pve1").Set("shared", boolean(true))
	idA, stA := e.create(downloadType, "iso-a", in)

	// without shared the existing file is refused; with it, it is used
	if f := e.checkFailures(downloadType, "iso-b", property.Map{}, isoInputs("pve1")); len(f) != 1 || f[0].Property != "fileName" {
		t.Fatalf("unshared second download: %v", f)
	}
	if f := e.checkFailures(downloadType, "iso-b", property.Map{}, in); len(f) != 0 {
		t.Fatalf("shared second download refused: %v", f)
	}
	idB, stB := e.create(downloadType, "iso-b", in)
	if idB != idA || stB.Get("size").AsNumber() != stA.Get("size").AsNumber() {
		t.Fatalf("second download: id %q size %v, want %q %v", idB, stB.Get("size"), idA, stA.Get("size"))
	}

	// a VM of stack B boots from it; stack A's delete leaves the file
	vol := stB.Get("volumeId").AsString()
	vmID, vmState := e.create(vmType, "b-cp1", property.NewMap(vmInputs(e, "pve1", "b-cp1", vol, 31)))
	e.delete(downloadType, "iso-a", idA, stA)
	if rd := e.read(downloadType, "iso-b", idB, stB, in); rd.ID != idB {
		t.Fatal("stack A's delete removed the file stack B's VM boots from")
	}

	// the same on the other node: a VM there does not keep pve1's local file
	idC, stC := e.create(downloadType, "iso-c", isoInputs("pve2").Set("shared", boolean(true)))
	e.delete(downloadType, "iso-c", idC, stC)
	if rd := e.read(downloadType, "iso-c", idC, stC, in); rd.ID != "" {
		t.Fatal("pve2's unused shared file was kept")
	}

	// once the VM is gone, the last delete removes the file
	e.delete(vmType, "b-cp1", vmID, vmState)
	e.delete(downloadType, "iso-b", idB, stB)
	if rd := e.read(downloadType, "iso-b", idB, stB, in); rd.ID != "" {
		t.Fatal("the shared file is still there after the last delete")
	}
	if !strings.HasPrefix(idB, "pve1/") {
		t.Fatalf("id %q", idB)
	}
}
