package pve

import (
	"strings"
	"testing"
)

// A qcow2 disk image is listed with the size of its file and reported, by
// the volume's own endpoint, with the size of the disk it holds; a disk
// imported from it has that virtual size (pve-storage Plugin.pm
// get_subdir_files vs volume_size_info; qemu-server import_from_volid).
func TestImportImageSizes(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	url := "https://factory.talos.dev/image/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba/v1.12.5/nocloud-amd64"
	download(t, ctx, c, "import", "talos.qcow2", url+".qcow2")
	download(t, ctx, c, "import", "talos.raw", url+".raw")

	node, _ := c.Node(ctx, "pve1")
	storage, err := node.Storage(ctx, "local")
	if err != nil {
		t.Fatal(err)
	}
	content, err := storage.GetContent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]uint64{}
	for _, e := range content {
		listed[e.Volid] = e.Size
	}
	if listed["local:import/talos.qcow2"] != 300<<20 || listed["local:import/talos.raw"] != 1246<<20 {
		t.Errorf("listed sizes %v: want the files' sizes, 300 MiB for the qcow2 and 1246 MiB for the raw image", listed)
	}
	for _, vol := range []string{"talos.qcow2", "talos.raw"} {
		st, body := rawCall(t, s, "GET", "/nodes/pve1/storage/local/content/local:import/"+vol, "", nil)
		if st != "200 OK" || !strings.Contains(body, `"size":1306525696`) {
			t.Errorf("%s: %s %s, want the virtual size 1246 MiB", vol, st, body)
		}
	}
	if used := storageStatus(s.node("pve1").storage("local"))["used"].(int64); used != (300+1246)<<20 {
		t.Errorf("local uses %d bytes, want the two files' sizes", used)
	}

	vm := createStarted(t, ctx, c, 100, opt("scsi0", "local-lvm:0,import-from=local:import/talos.qcow2"))
	if got := vm.VirtualMachineConfig.SCSIs["scsi0"]; !strings.Contains(got, "size=1246M") {
		t.Errorf("imported disk %q, want the image's virtual size 1246M", got)
	}
}
