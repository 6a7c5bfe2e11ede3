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

// A VM whose Check skipped the cluster checks (inputs unchanged) can still
// be created: Diff replaces a VM deleted outside Pulumi. The Create runs the
// skipped checks before its first write and fails as Check would have,
// naming the input: here a bridge the cluster no longer has. Nothing is
// posted.
func TestCreateAfterSkippedCheckChecksTheClusterFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	_, isoState := e.create(downloadType, "iso", isoInputs("pve1"))
	in := vmInputs(e, "pve1", "skipped-recheck", isoState.Get("volumeId").AsString(), 22)
	in["networkDevices"] = arr(obj(map[string]property.Value{"bridge": str("vmbr9")}))
	same := property.NewMap(in)

	checked := e.check(vmType, "skipped-recheck", same, same) // skipped: no failure
	e.lab.PVE.ResetStats()
	_, err := e.s.Create(p.CreateRequest{Urn: urn(vmType, "skipped-recheck"), Properties: checked})
	if err == nil {
		t.Fatal("create after a skipped Check: no error, want the missing bridge vmbr9")
	}
	for _, want := range []string{"networkDevices", `bridge "vmbr9" does not exist on node pve1`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("create after a skipped Check: %v, want it to say %s", err, want)
		}
	}
	for kind, n := range e.lab.PVE.Stats().ByKind {
		if strings.HasPrefix(kind, "POST ") || strings.HasPrefix(kind, "PUT ") || strings.HasPrefix(kind, "DELETE ") {
			t.Errorf("create after a skipped Check: %d %s, want no write", n, kind)
		}
	}
	e.requireNoVMs()
}

// A fresh create's Check ran every check: its Create does not run them
// again (no permission or bridge reads), so its request count is as before
// (15 in the lab). Note: a re-check forced here would cost no request
// either, as Check's reads are kept for the run; the entry that triggers it
// is tested by TestCreateAfterSkippedCheckChecksTheClusterFirst.
func TestFreshCreateDoesNotCheckTheClusterAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	_, isoState := e.create(downloadType, "iso", isoInputs("pve1"))
	in := property.NewMap(vmInputs(e, "pve1", "fresh-nocheck", isoState.Get("volumeId").AsString(), 23))

	checked := e.check(vmType, "fresh-nocheck", property.Map{}, in)
	e.lab.PVE.ResetStats()
	if _, err := e.s.Create(p.CreateRequest{Urn: urn(vmType, "fresh-nocheck"), Properties: checked}); err != nil {
		t.Fatalf("create: %v", err)
	}
	for _, kind := range []string{"GET /access/permissions", "GET /nodes/{node}/network"} {
		if n := e.lab.PVE.Stats().ByKind[kind]; n != 0 {
			t.Errorf("fresh create: %d %s, want none (Check ran the checks)", n, kind)
		}
	}
}
