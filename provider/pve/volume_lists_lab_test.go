package pve_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

const contentCall = "GET /nodes/{node}/storage/{storage}/content"

func isoRequest(name string) pve.DownloadRequest {
	return pve.DownloadRequest{Node: "pve1", Storage: "local", URL: "https://images.lab.example/" + name, Content: "iso", FileName: name}
}

// another connects a second client to the lab: another provider process,
// or another user of the same Proxmox.
func another(t *testing.T, ctx context.Context, s *labpve.Server) *pve.Client {
	t.Helper()
	c, err := pve.Connect(ctx, pve.Options{Endpoint: s.Endpoint(), APIToken: s.APIToken(), CACertPEM: string(s.CACertPEM())})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func labHas(s *labpve.Server, volid string) bool {
	for _, v := range s.Volumes("pve1", "local") {
		if v.VolID == volid {
			return true
		}
	}
	return false
}

// A Check's lookup after the read that followed a download answers from
// that read; the Checks of many VMs share one read; this client's own
// writes to the storage void it.
func TestRecentVolumeLookups(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	a := isoRequest("a.iso")
	if err := c.DownloadURL(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.FindVolume(ctx, "pve1", "local", a.VolumeID()); err != nil || !found {
		t.Fatalf("after the download: found %v, %v", found, err)
	}
	before := s.Calls(contentCall)
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, found, err := c.FindRecentVolume(ctx, "pve1", "local", a.VolumeID(), time.Hour); err != nil || !found {
				t.Errorf("recent lookup: found %v, %v", found, err)
			}
		}()
	}
	wg.Wait()
	if got := s.Calls(contentCall) - before; got != 0 {
		t.Fatalf("5 recent lookups after a read sent %d content lists, want 0", got)
	}

	// its own delete voids the kept list
	if err := c.DeleteVolume(ctx, "pve1", "local", a.VolumeID()); err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.FindRecentVolume(ctx, "pve1", "local", a.VolumeID(), time.Hour); err != nil || found {
		t.Fatalf("recent lookup after this client deleted it: found %v, %v", found, err)
	}
	// and so does its own download
	b := isoRequest("b.iso")
	if err := c.DownloadURL(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.FindRecentVolume(ctx, "pve1", "local", b.VolumeID(), time.Hour); err != nil || !found {
		t.Fatalf("recent lookup after this client downloaded it: found %v, %v", found, err)
	}

	// a download on another node leaves this node's list of a storage that
	// is not shared (the lab's local is a directory on each node)
	before = s.Calls(contentCall)
	if err := c.DownloadURL(ctx, pve.DownloadRequest{Node: "pve2", Storage: "local", URL: "https://images.lab.example/c.iso", Content: "iso", FileName: "c.iso"}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.FindRecentVolume(ctx, "pve1", "local", b.VolumeID(), time.Hour); err != nil || !found {
		t.Fatalf("recent lookup on pve1 after a download on pve2: found %v, %v", found, err)
	}
	if got := s.Calls(contentCall) - before; got != 0 {
		t.Fatalf("a download on pve2 made pve1's lookup list the storage %d times, want 0", got)
	}

	// concurrent askers with nothing kept share one read
	s2, c2, ctx2 := startLab(t, labpve.Options{})
	before = s2.Calls(contentCall)
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := c2.FindRecentVolume(ctx2, "pve1", "local", "local:iso/x.iso", time.Hour); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := s2.Calls(contentCall) - before; got != 1 {
		t.Fatalf("5 concurrent recent lookups sent %d content lists, want 1", got)
	}
	// VM disks change with VM calls, which do not void the list: always read
	before = s2.Calls(contentCall)
	if _, _, err := c2.FindRecentVolume(ctx2, "pve1", "local", "local:100/vm-100-disk-0.raw", time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := s2.Calls(contentCall) - before; got != 1 {
		t.Fatalf("a recent lookup of a VM disk sent %d content lists, want 1", got)
	}
}

// What another client changes is never hidden from a write's guard: a
// delete after this client's list showed the file absent still deletes
// the file another client made since, and a download's guard sees it. A
// recent lookup sees another client's change once the list is older than
// its maxAge.
func TestKeptListsNeverGuardWrites(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	other := another(t, ctx, s)
	f := isoRequest("f.iso")
	if _, found, err := c.FindRecentVolume(ctx, "pve1", "local", f.VolumeID(), time.Hour); err != nil || found {
		t.Fatalf("before any download: found %v, %v", found, err)
	}
	if err := other.DownloadURL(ctx, f); err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.FindVolume(ctx, "pve1", "local", f.VolumeID()); err != nil || !found {
		t.Fatalf("FindVolume after another client's download: found %v, %v", found, err)
	}
	if err := other.DeleteVolume(ctx, "pve1", "local", f.VolumeID()); err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.FindRecentVolume(ctx, "pve1", "local", f.VolumeID(), 0); err != nil || found {
		t.Fatalf("a recent lookup with maxAge 0 after another client's delete: found %v, %v", found, err)
	}
	// c's kept list says absent now; the other client makes it again
	if err := other.DownloadURL(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteVolume(ctx, "pve1", "local", f.VolumeID()); err != nil {
		t.Fatal(err)
	}
	if labHas(s, f.VolumeID()) {
		t.Fatalf("DeleteVolume left %s: it trusted a list read before another client made the file", f.VolumeID())
	}
}
