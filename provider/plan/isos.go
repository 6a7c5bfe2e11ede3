package plan

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// ISODownload is one Image Factory ISO on a host's storage. A plan keeps
// every ISO a node of the cluster boots from: an installed node never needs
// a new one (Talos upgrades go through the Upgrade API), and Proxmox
// refuses to start a VM whose ISO volume is gone. New nodes boot the ISO of
// the plan's Talos version and schematic.
type ISODownload struct {
	Host    string
	Storage string
	// FileName says what it holds (ISOFileName).
	FileName string
	// URL is where the host downloads it from. For an ISO of another
	// schematic than the plan's it cannot be rebuilt from the file name
	// (which keeps 12 characters of the schematic ID); URLKnown is false
	// then, and the download keeps the URL it was created with.
	URL      string
	URLKnown bool
	// Current is true for the ISO of the plan's version and schematic.
	Current bool
}

// VolumeID is the volume a VM's CD drive names.
func (d ISODownload) VolumeID() string { return ISOVolumeID(d.Storage, d.FileName) }

// ISOVolumeID is "<storage>:iso/<file>".
func ISOVolumeID(storage, file string) string { return storage + ":iso/" + file }

// ISOFileName names an ISO after what it holds, so that another version or
// schematic is another file next to it:
// talos-v1.12.5-ce4c980550dd-nocloud-amd64.iso.
func ISOFileName(version, schematicID, platform string) string {
	return fmt.Sprintf("talos-%s-%s-%s-amd64.iso", version, shortID(schematicID), platform)
}

var isoFile = regexp.MustCompile(`^talos-(v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.]+)?)-([0-9a-f]{12})-([a-z0-9]+)-amd64\.iso$`)

// ParseISOFileName reads ISOFileName back; ok is false for any other file.
func ParseISOFileName(file string) (version, shortSchematic, platform string, ok bool) {
	m := isoFile.FindStringSubmatch(file)
	if m == nil {
		return "", "", "", false
	}

	return m[1], m[2], m[3], true
}

// splitISOVolume splits "<storage>:iso/<file>".
func splitISOVolume(vol string) (storage, file string, ok bool) {
	storage, rest, found := strings.Cut(vol, ":")
	file, isISO := strings.CutPrefix(rest, "iso/")
	if !found || !isISO || storage == "" || file == "" {
		return "", "", false
	}

	return storage, file, true
}

// bootISO is the ISO a node's VM boots: the one an existing VM already has
// (its installed system does not need another; nodes never move between
// hosts), else the plan's.
func (b *builder) bootISO(s *slot, h Host) (storage, file string) {
	if s.prev != nil {
		if st, f, ok := splitISOVolume(s.prev.ISO); ok {
			if _, _, _, ours := ParseISOFileName(f); ours {
				return st, f
			}
		}
	}

	return b.isoStorage(h), b.planISO()
}

// planISO is the file name of the ISO of the plan's version and schematic.
func (b *builder) planISO() string {
	c := &b.plan.Cluster

	return ISOFileName(c.TalosVersion, c.Image.SchematicID, c.Image.Platform)
}

// buildISOs lists the ISOs the nodes boot, by host in pool order, the
// plan's own first on each host.
func (b *builder) buildISOs() {
	p := &b.plan
	p.ISOs = []ISODownload{}
	current := b.planISO()

	for _, h := range b.spec.Hosts {
		var here []ISODownload

		for i := range p.Nodes {
			vm := &p.Nodes[i].VM
			if vm.Host != h.Node || vm.Boot.CloneVMID != 0 || vm.Boot.ISOFile == "" {
				continue
			}

			if slices.ContainsFunc(here, func(d ISODownload) bool { return d.Storage == vm.Boot.ISOStorage && d.FileName == vm.Boot.ISOFile }) {
				continue
			}

			d := ISODownload{Host: h.Node, Storage: vm.Boot.ISOStorage, FileName: vm.Boot.ISOFile, Current: vm.Boot.ISOFile == current}
			d.URL, d.URLKnown = b.isoURL(d.FileName)
			here = append(here, d)
		}

		slices.SortStableFunc(here, func(a, c ISODownload) int {
			switch {
			case a.Current == c.Current:
				return strings.Compare(a.FileName, c.FileName)
			case a.Current:
				return -1
			}

			return 1
		})
		p.ISOs = append(p.ISOs, here...)
	}
}

// isoURL is the download URL of one of our ISO files, from the factory
// settings of the spec.
func (b *builder) isoURL(file string) (string, bool) {
	c := &b.plan.Cluster
	version, short, platform, _ := ParseISOFileName(file)

	urls, err := talosconfig.FactoryURLs(c.Image.SchematicID, version, talosconfig.FactoryOptions{
		BaseURL: b.spec.Image.FactoryURL, InstallerRegistry: b.spec.Image.InstallerRegistry, Platform: platform,
	})
	if err != nil {
		return "", false
	}

	if short != shortID(c.Image.SchematicID) {
		// Another schematic, known only by its start: a URL the factory
		// answers with 404, never another image.
		return strings.Replace(urls.ISO, c.Image.SchematicID, short, 1), false
	}

	return urls.ISO, true
}
