package proxmox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

func TestDownloadFileLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := isoInputs("pve2")
	id, st := e.create(downloadType, "iso", in)
	if st.Get("size").AsNumber() <= 0 || st.Get("fileName").AsString() != "lablinux-1.0-agent.iso" {
		t.Fatalf("state %v", st)
	}
	if d := e.diff(downloadType, "iso", id, st, in, in); d.HasChanges {
		t.Fatalf("second diff: %v", diffKinds(d))
	}
	// a file of that name that nobody manages is not overwritten
	f := e.checkFailures(downloadType, "iso-again", property.Map{}, in)
	if len(f) != 1 || f[0].Property != "fileName" || !strings.Contains(f[0].Reason, "pulumi import") {
		t.Fatalf("existing file: %v", f)
	}
	// another URL for the same name replaces the file, deleting it first
	in2 := in.Set("url", str("https://images.example.com/lablinux/qemu-guest-agent/lablinux-1.1.iso"))
	d := e.diff(downloadType, "iso", id, st, in, in2)
	if diffKinds(d)["url"] != p.UpdateReplace || !d.DeleteBeforeReplace {
		t.Fatalf("url change: %v dbr=%v", diffKinds(d), d.DeleteBeforeReplace)
	}
	// certificate checking only matters for the next download: in place
	in3 := in.Set("verifyCertificates", boolean(false))
	if d := e.diff(downloadType, "iso", id, st, in, in3); diffKinds(d)["verifyCertificates"] != p.Add {
		t.Fatalf("verifyCertificates: %v", diffKinds(d))
	}
	// import by id, then the same program shows no diff
	rd := e.read(downloadType, "adopted", id, property.Map{}, property.Map{})
	if rd.ID != id || rd.Inputs.Get("fileName").AsString() != "lablinux-1.0-agent.iso" {
		t.Fatalf("import: %v %v", rd.ID, rd.Inputs)
	}
	if d := e.diff(downloadType, "adopted", id, rd.Properties, rd.Inputs, in); d.HasChanges {
		t.Fatalf("diff after import with the URL added: %v", diffKinds(d))
	}
	e.delete(downloadType, "iso", id, st)
	if rd := e.read(downloadType, "iso", id, st, in); rd.ID != "" {
		t.Fatal("file still there after delete")
	}
	e.delete(downloadType, "iso", id, st) // already gone: success
}

func TestDownloadFileBadInputs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	base := isoInputs("pve1")
	cases := []struct {
		name   string
		in     property.Map
		path   string
		reason string
	}{
		{"unknown node", base.Set("node", str("nope")), "node", "pve1"},
		{"storage without iso", base.Set("storage", str("local-lvm")), "storage", "content"},
		{"wrong extension", base.Set("fileName", str("talos.raw")), "fileName", ".iso or .img"},
		{"unsafe name", base.Set("fileName", str("talos v1.iso")), "fileName", "letters, digits"},
		{"ftp url", base.Set("url", str("ftp://x/y.iso")), "url", "http or https"},
		{"checksum without algorithm", base.Set("checksum", str("abcd")), "checksumAlgorithm", "needs"},
		{"short sha256", base.Set("checksum", str("abcd")).Set("checksumAlgorithm", str("sha256")), "checksum", "64 hex"},
		{"decompressing an import", base.Set("content", str("import")).Set("fileName", str("disk.raw")).Set("decompression", str("gz")), "decompression", "ISOs only"},
	}
	for _, c := range cases {
		f := e.checkFailures(downloadType, "bad", property.Map{}, c.in)
		ok := false
		for _, x := range f {
			ok = ok || (x.Property == c.path && strings.Contains(x.Reason, c.reason))
		}
		if !ok {
			t.Errorf("%s: no failure at %s mentioning %q: %v", c.name, c.path, c.reason, f)
		}
	}
}

func TestDownloadFileChecksumMismatchFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := isoInputs("pve1").Set("checksum", str(strings.Repeat("0", 64))).Set("checksumAlgorithm", str("sha256"))
	checked := e.check(downloadType, "iso", property.Map{}, in)
	_, err := e.s.Create(p.CreateRequest{Urn: urn(downloadType, "iso"), Properties: checked})
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a wrong checksum must fail the create, quoting Proxmox: %v", err)
	}
}

func TestVirtualMachineAgentTimeoutKeepsTheVM(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	iso := isoInputs("pve1").Set("url", str("https://images.example.com/plain/os.iso")).Set("fileName", str("os.iso"))
	_, ist := e.create(downloadType, "iso", iso)
	m := vmInputs(e, "pve1", "noagent", ist.Get("volumeId").AsString(), 30)
	m["agent"] = obj(map[string]property.Value{"timeout": num(1)})
	in := e.check(vmType, "noagent", property.Map{}, property.NewMap(m))
	resp, err := e.s.Create(p.CreateRequest{Urn: urn(vmType, "noagent"), Properties: in})
	if err == nil || resp.PartialState == nil || resp.ID == "" {
		t.Fatalf("agent timeout: err %v partial %v id %q", err, resp.PartialState, resp.ID)
	}
	if r := strings.Join(resp.PartialState.Reasons, " "); !strings.Contains(r, "guest agent") || !strings.Contains(r, "qemu-guest-agent") {
		t.Errorf("reason does not say what to do: %s", r)
	}
	// the next up can decide not to wait; the VM is the same one
	m["agent"] = obj(map[string]property.Value{"waitForAddress": boolean(false)})
	st := e.update(vmType, "noagent", resp.ID, resp.Properties, in, property.NewMap(m))
	if st.Get("status").AsString() != "running" || len(e.lab.VMs()) != 1 {
		t.Fatalf("after update: %v, lab %+v", st.Get("status"), e.lab.VMs())
	}
}

// A download sends download-url without listing the storage again after its
// Check (one list, afterwards, for the size). A file that appeared between
// Check and Create is Proxmox's to refuse ("refusing to override existing
// file"): the create fails as Check would have, and the other client's file
// stays out of this resource's state (and so out of its delete).
func TestDownloadFileCreateLeavesTheExistingFileCheckToProxmox(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := isoInputs("pve1")
	checkedB := e.check(downloadType, "iso-b", property.Map{}, in)

	checkedA := e.check(downloadType, "iso-a", property.Map{}, in)
	e.lab.PVE.ResetStats()
	respA, err := e.s.Create(p.CreateRequest{Urn: urn(downloadType, "iso-a"), Properties: checkedA})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.lab.PVE.Stats().ByKind["GET /nodes/{node}/storage/{storage}/content"]; n != 1 {
		t.Errorf("a new download listed the storage %d times in its create, want 1 (after the download, for its size)", n)
	}

	respB, err := e.s.Create(p.CreateRequest{Urn: urn(downloadType, "iso-b"), Properties: checkedB})
	if err == nil || !strings.Contains(err.Error(), "already exists on node pve1") || !strings.Contains(err.Error(), "overwrite: true") {
		t.Fatalf("a download over a file that appeared after its Check: %v, want the error Check gives", err)
	}
	if respB.ID != "" {
		t.Fatalf("the refused download kept %q in its state: its delete would remove the other resource's file", respB.ID)
	}
	if rd := e.read(downloadType, "iso-a", respA.ID, respA.Properties, in); rd.ID != respA.ID {
		t.Fatal("the first download's file is gone")
	}
}

// A shared download whose Check saw no file moments ago is sent without a
// fresh list; when another client's download made the file since, Proxmox
// refuses and the create uses that file as it is (as a Check that saw it
// would have), with no second download.
func TestSharedDownloadUsesAFileThatAppearedAfterItsCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := isoInputs("pve1").Set("shared", boolean(true))
	checked := e.check(downloadType, "iso", property.Map{}, in)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other, err := pve.Connect(ctx, pve.Options{Endpoint: e.lab.Endpoint(), APIToken: e.lab.APIToken(), CACertPEM: string(e.lab.CACertPEM())})
	if err != nil {
		t.Fatal(err)
	}
	r := pve.DownloadRequest{Node: "pve1", Storage: "local", Content: "iso", FileName: "lablinux-1.0-agent.iso",
		URL: "https://images.example.com/lablinux/qemu-guest-agent/lablinux-1.0.iso"}
	if err := other.DownloadURL(ctx, r); err != nil {
		t.Fatal(err)
	}
	e.lab.PVE.ResetStats()
	resp, err := e.s.Create(p.CreateRequest{Urn: urn(downloadType, "iso"), Properties: checked})
	if err != nil {
		t.Fatalf("a shared download of a file that appeared after its Check: %v", err)
	}
	if resp.ID != "pve1/"+r.VolumeID() || resp.Properties.Get("size").AsNumber() <= 0 {
		t.Fatalf("id %q, size %v: want the existing file, used as it is", resp.ID, resp.Properties.Get("size"))
	}
	if n := e.lab.PVE.Stats().ByKind["POST /nodes/{node}/storage/{storage}/download-url"]; n != 1 {
		t.Errorf("%d download requests, want the one Proxmox refused", n)
	}
}
