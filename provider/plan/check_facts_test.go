package plan

import (
	"strings"
	"testing"
)

// withResources gives every host of f the lab's storages and bridges.
func withResources(f Facts) Facts {
	for name, h := range f.Hosts {
		h.Storages = map[string][]string{"local": {"iso", "vztmpl", "import"}, "local-lvm": {"images", "rootdir"}}
		h.Bridges = []string{"vmbr0", "vmbr1"}
		f.Hosts[name] = h
	}
	return f
}

func TestHostResourcesNamedByTheInput(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Spec)
		want []string
	}{
		{"disk storage missing", func(s *Spec) { s.Hosts[1].DiskStorage = "fast" }, []string{"hosts[1].diskStorage:", `storage "fast" is not on Proxmox node pve2`, "local, local-lvm"}},
		{"disk storage without images", func(s *Spec) { s.Hosts[0].DiskStorage = "local" }, []string{"hosts[0].diskStorage:", "does not hold VM disks"}},
		{"ISO storage without iso", func(s *Spec) { s.Image.ISOStorage = "local-lvm" }, []string{"image.isoStorage:", "does not hold ISO images"}},
		{"host ISO storage", func(s *Spec) { s.Hosts[2].ISOStorage = "nas" }, []string{"hosts[2].isoStorage:", `"nas" is not on Proxmox node pve3`}},
		{"data disk storage", func(s *Spec) { s.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 10, Storage: "ceph"}} }, []string{"workerPools[0].dataDisks[0].storage:", `"ceph"`}},
		{"bridge", func(s *Spec) { s.Network.Bridge = "vmbr9" }, []string{"network.bridge:", `bridge "vmbr9" does not exist on Proxmox node`, "vmbr0, vmbr1"}},
	}
	for _, c := range cases {
		s := baseSpec()
		c.edit(&s)
		got := computeErr(t, s, withResources(roomy()), nil)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
		if strings.Count(got, "\n  - ") > 1 {
			t.Errorf("%s: reported more than once: %s", c.name, got)
		}
	}
	// The lab's resources are fine; a host with unknown resources is not checked.
	mustCompute(t, baseSpec(), withResources(roomy()), nil)
	s := baseSpec()
	s.Network.Bridge = "vmbr9"
	mustCompute(t, s, roomy(), nil)
}
