package pve

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

func TestDownloadURL(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	url := "https://factory.talos.dev/image/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba/v1.12.0/nocloud-amd64.iso"
	sum := sha256.Sum256(RemoteFileContent(url))
	good := hex.EncodeToString(sum[:])
	dl := func(o proxmox.StorageDownloadURLOptions) (string, error) {
		o.Node = "pve1"
		if o.Storage == "" {
			o.Storage = "local"
		}
		upid, err := node.StorageDownloadURL(ctx, &o)
		if err != nil {
			return "", err
		}
		return waitExit(t, ctx, proxmox.NewTask(proxmox.UPID(upid), c)), nil
	}
	st, err := dl(proxmox.StorageDownloadURLOptions{Content: "iso", Filename: "talos.iso", URL: url, Checksum: good, ChecksumAlgorithm: "sha256"})
	if err != nil || st != "OK" {
		t.Fatalf("download: %v %q", err, st)
	}
	vols := s.Volumes("pve1", "local")
	if len(vols) != 1 || vols[0].VolID != "local:iso/talos.iso" || vols[0].Image.SourceURL != url || vols[0].Content != "iso" {
		t.Fatalf("volumes: %+v", vols)
	}
	// Listing through go-proxmox.
	storage, err := node.Storage(ctx, "local")
	if err != nil {
		t.Fatal(err)
	}
	iso, err := storage.ISO(ctx, "talos.iso")
	if err != nil || iso.Size != 128<<20 {
		t.Fatalf("iso: %v %+v", err, iso)
	}
	content, err := storage.GetContent(ctx)
	if err != nil || len(content) != 1 || content[0].Volid != "local:iso/talos.iso" {
		t.Fatalf("content: %v %+v", err, content)
	}

	cases := []struct {
		name string
		o    proxmox.StorageDownloadURLOptions
		want string // task exit status or API error
	}{
		{"same file again", proxmox.StorageDownloadURLOptions{Content: "iso", Filename: "talos.iso", URL: url}, "refusing to override existing file '/var/lib/vz/template/iso/talos.iso'"},
		{"same file, matching checksum", proxmox.StorageDownloadURLOptions{Content: "iso", Filename: "talos.iso", URL: url, Checksum: good, ChecksumAlgorithm: "sha256"}, "OK"},
		{"checksum mismatch", proxmox.StorageDownloadURLOptions{Content: "iso", Filename: "other.iso", URL: url, Checksum: strings.Repeat("0", 64), ChecksumAlgorithm: "sha256"}, "checksum mismatch: got '" + good + "' != expect '" + strings.Repeat("0", 64) + "'"},
		{"raw name as iso", proxmox.StorageDownloadURLOptions{Content: "iso", Filename: "talos.raw", URL: url}, `"filename":"wrong file extension"`},
		{"import needs an image extension", proxmox.StorageDownloadURLOptions{Content: "import", Filename: "talos.iso", URL: url}, `"filename":"invalid filename or wrong extension"`},
		{"content not on storage", proxmox.StorageDownloadURLOptions{Content: "vztmpl", Filename: "ct.tar.zst", URL: url, Storage: "local-lvm"}, "500 can't upload to storage type 'lvmthin', not a file based storage!"},
		{"bad content enum", proxmox.StorageDownloadURLOptions{Content: "images", Filename: "x.raw", URL: url}, `"content":"value 'images' does not have a value in the enumeration 'iso, vztmpl, import'"`},
		{"not a URL", proxmox.StorageDownloadURLOptions{Content: "iso", Filename: "x.iso", URL: "file:///etc/passwd"}, `"url":"value does not match the regex pattern"`},
		{"unresolvable host", proxmox.StorageDownloadURLOptions{Content: "iso", Filename: "y.iso", URL: "https://nowhere.invalid/y.iso"}, "download failed: command '/usr/bin/wget --progress=dot:giga -O /var/lib/vz/template/iso/y.iso.tmp_dwnl.1234 https://nowhere.invalid/y.iso' failed: exit code 4"},
		{"decompression not for import", proxmox.StorageDownloadURLOptions{Content: "import", Filename: "z.raw", URL: url, Compression: "zst"}, "decompression not supported for import"},
	}
	for _, tc := range cases {
		st, err := dl(tc.o)
		got := st
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// A normalised file name.
	if st, _ := dl(proxmox.StorageDownloadURLOptions{Content: "import", Filename: "../my image.raw", URL: url}); st != "OK" {
		t.Fatalf("normalised name: %q", st)
	}
	if vols := s.Volumes("pve1", "local"); vols[0].VolID != "local:import/my_image.raw" {
		t.Fatalf("volumes %+v", vols)
	}
	// Delete content (the volume id holds a slash, sent unescaped).
	task, err := storage.DeleteContent(ctx, "local:iso/talos.iso")
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	task, _ = storage.DeleteContent(ctx, "local:iso/talos.iso")
	if st := waitExit(t, ctx, task); st != "unlink '/var/lib/vz/template/iso/talos.iso' failed - No such file or directory" {
		t.Fatalf("delete missing: %q", st)
	}
	_, err = storage.ISO(ctx, "talos.iso")
	mustContain(t, err, "volume_size_info on 'local:iso/talos.iso' failed - no format")
}

func TestStorageStatus(t *testing.T) {
	t.Parallel()
	_, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	storages, err := node.Storages(ctx)
	if err != nil || len(storages) != 2 {
		t.Fatalf("storages: %v %+v", err, storages)
	}
	if storages[0].Name != "local" || storages[0].Content != "iso,import,vztmpl,snippets" || storages[1].Type != "lvmthin" || storages[1].Total != 500<<30 {
		t.Fatalf("storages: %+v %+v", storages[0], storages[1])
	}
	if iso, err := node.StorageISO(ctx); err != nil || iso.Name != "local" {
		t.Fatalf("iso storage: %v %+v", err, iso)
	}
	if img, err := node.StorageImages(ctx); err != nil || img.Name != "local-lvm" {
		t.Fatalf("images storage: %v %+v", err, img)
	}
	_, err = node.Storage(ctx, "nfs")
	mustContain(t, err, "500 storage 'nfs' does not exist")
	// Thin provisioning: a VM disk only counts what was written.
	task, _ := node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:100"))
	waitOK(t, ctx, task)
	lvm, _ := node.Storage(ctx, "local-lvm")
	if lvm.Used != 0 {
		t.Fatalf("thin pool used %d", lvm.Used)
	}
}

func TestPools(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	if err := c.NewPool(ctx, "k8s", "cluster VMs"); err != nil {
		t.Fatal(err)
	}
	mustContain(t, c.NewPool(ctx, "k8s", ""), "500 create pool failed: pool 'k8s' already exists")
	mustContain(t, c.NewPool(ctx, "9lives", ""), "500 create pool failed: pool name must start with a letter")
	node, _ := c.Node(ctx, "pve1")
	task, err := node.NewVirtualMachine(ctx, 100, opt("pool", "k8s"))
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	p, err := c.Pool(ctx, "k8s")
	if err != nil || len(p.Members) != 1 || p.Members[0].VMID != 100 || p.Comment != "cluster VMs" {
		t.Fatalf("pool: %v %+v", err, p)
	}
	mustContain(t, p.Delete(ctx), "500 delete pool failed: pool 'k8s' is not empty (contains VM 100)")
	vm, _ := node.VirtualMachine(ctx, 100)
	task, _ = vm.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true})
	waitOK(t, ctx, task)
	if err := p.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.Pools()) != 0 {
		t.Fatalf("pools left: %v", s.Pools())
	}
	res, err := func() (proxmox.ClusterResources, error) { cl, _ := c.Cluster(ctx); return cl.Resources(ctx, "node") }()
	if err != nil || len(res) != 3 || res[0].Type != "node" {
		t.Fatalf("resources: %v %+v", err, res)
	}
}
