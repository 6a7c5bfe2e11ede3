package proxmox_test

import (
	"slices"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// A Check whose inputs are the old ones (a no-op preview) does not check
// them against the cluster again: no privilege or per-host reads, and an
// input the cluster no longer has (a bridge removed since) passes, as an
// up that changes nothing touches nothing. Any change, and a new resource,
// checks everything again.
func TestUnchangedVMInputsAreNotCheckedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := vmInputs(e, "pve1", "vm1", "local:iso/none.iso", 21)
	in["networkDevices"] = arr(obj(map[string]property.Value{"bridge": str("vmbr9")}))
	same := property.NewMap(in)

	e.lab.PVE.ResetStats()
	if f := e.checkFailures(vmType, "vm1", same, same); len(f) != 0 {
		t.Errorf("unchanged inputs: %v, want no failure (not checked against the cluster again)", f)
	}
	for _, kind := range []string{"GET /access/permissions", "GET /nodes/{node}/network", "GET /nodes/{node}/storage",
		"GET /nodes/{node}/storage/{storage}/content"} {
		if n := e.lab.PVE.Stats().ByKind[kind]; n != 0 {
			t.Errorf("unchanged inputs: %d %s, want none", n, kind)
		}
	}

	in["memory"] = obj(map[string]property.Value{"dedicated": num(4096)})
	changed := property.NewMap(in)
	for what, olds := range map[string]property.Map{"changed inputs": same, "a new VM": {}} {
		f := e.checkFailures(vmType, "vm1", olds, changed)
		if !slices.ContainsFunc(f, func(c p.CheckFailure) bool { return strings.Contains(c.Reason, `bridge "vmbr9" does not exist`) }) {
			t.Errorf("%s: %v, want the missing bridge vmbr9", what, f)
		}
	}
}

// The same for a DownloadFile: a storage that does not hold ISOs passes
// unchanged inputs, and fails changed ones and a new file.
func TestUnchangedDownloadInputsAreNotCheckedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := isoInputs("pve1").AsMap()
	in["storage"] = str("local-lvm")
	same := property.NewMap(in)
	if f := e.checkFailures(downloadType, "iso", same, same); len(f) != 0 {
		t.Errorf("unchanged inputs: %v, want no failure", f)
	}
	in["url"] = str("https://images.example.com/lablinux/qemu-guest-agent/lablinux-1.1.iso")
	changed := property.NewMap(in)
	for what, olds := range map[string]property.Map{"changed inputs": same, "a new file": {}} {
		f := e.checkFailures(downloadType, "iso", olds, changed)
		if !slices.ContainsFunc(f, func(c p.CheckFailure) bool { return strings.Contains(c.Reason, "not configured for content") }) {
			t.Errorf("%s: %v, want storage local-lvm refused for ISOs", what, f)
		}
	}
}
