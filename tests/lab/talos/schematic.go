package talos

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"

	"gopkg.in/yaml.v3"
)

// OfficialExtensions is the list of official system extensions whose
// combinations (up to MaxCatalogExtensions of them, sorted by name) the lab
// recognises by schematic ID. Names as in siderolabs/extensions.
var OfficialExtensions = []string{
	"siderolabs/amd-ucode",
	"siderolabs/amdgpu",
	"siderolabs/btrfs",
	"siderolabs/cloudflared",
	"siderolabs/crun",
	"siderolabs/drbd",
	"siderolabs/gvisor",
	"siderolabs/i915",
	"siderolabs/intel-ucode",
	"siderolabs/iscsi-tools",
	"siderolabs/kata-containers",
	"siderolabs/lldpd",
	"siderolabs/mdadm",
	"siderolabs/nfsd",
	"siderolabs/nut-client",
	"siderolabs/qemu-guest-agent",
	"siderolabs/spin",
	"siderolabs/tailscale",
	"siderolabs/util-linux-tools",
	"siderolabs/zfs",
}

// MaxCatalogExtensions bounds the combinations precomputed by a Catalog.
const MaxCatalogExtensions = 4

// QemuGuestAgent is the extension that makes the QEMU guest agent answer.
const QemuGuestAgent = "siderolabs/qemu-guest-agent"

// schematic mirrors the Image Factory's schematic document (field names and
// order as in siderolabs/image-factory pkg/schematic/schematic.go), so that
// marshalling it with yaml.v3 gives the bytes whose sha256 is the ID.
type schematic struct {
	Customization customization `yaml:"customization"`
}

type customization struct {
	ExtraKernelArgs  []string         `yaml:"extraKernelArgs,omitempty"`
	SystemExtensions systemExtensions `yaml:"systemExtensions,omitempty"`
}

type systemExtensions struct {
	OfficialExtensions []string `yaml:"officialExtensions,omitempty"`
}

// SchematicID computes the Image Factory schematic ID of a schematic with the
// given official extensions, in the order given (order changes the ID).
func SchematicID(extensions []string) string {
	data, err := yaml.Marshal(schematic{Customization: customization{
		SystemExtensions: systemExtensions{OfficialExtensions: extensions},
	}})
	if err != nil {
		panic(err) // marshalling plain strings cannot fail
	}

	sum := sha256.Sum256(data)

	return hex.EncodeToString(sum[:])
}

// Catalog maps schematic IDs back to extension lists. The Image Factory
// cannot be asked (no network), and an ID cannot be reversed, so the catalog
// knows the empty schematic, every sorted combination of up to
// MaxCatalogExtensions OfficialExtensions, and whatever tests register.
type Catalog struct {
	once  sync.Once
	mu    sync.Mutex
	known map[string][]string
}

// NewCatalog returns a catalog; combinations are computed on first lookup.
func NewCatalog() *Catalog {
	return &Catalog{known: map[string][]string{}}
}

// Register makes a schematic with these extensions (in this order) known.
// It returns the schematic ID.
func (c *Catalog) Register(extensions ...string) string {
	id := SchematicID(extensions)

	c.mu.Lock()
	defer c.mu.Unlock()

	c.known[id] = slices.Clone(extensions)

	return id
}

// Lookup returns the extensions of a schematic ID; ok is false for IDs the
// catalog does not know. The empty ID ("", vanilla release assets) has none.
func (c *Catalog) Lookup(id string) (extensions []string, ok bool) {
	if id == "" {
		return nil, true
	}

	c.once.Do(c.precompute)

	c.mu.Lock()
	defer c.mu.Unlock()

	ext, ok := c.known[id]

	return slices.Clone(ext), ok
}

func (c *Catalog) precompute() {
	names := slices.Clone(OfficialExtensions)
	slices.Sort(names)

	found := map[string][]string{}

	var walk func(start int, chosen []string)

	walk = func(start int, chosen []string) {
		found[SchematicID(chosen)] = slices.Clone(chosen)

		if len(chosen) == MaxCatalogExtensions {
			return
		}

		for i := start; i < len(names); i++ {
			walk(i+1, append(chosen, names[i]))
		}
	}

	walk(0, nil)

	c.mu.Lock()
	defer c.mu.Unlock()

	for id, ext := range found {
		if _, ok := c.known[id]; !ok {
			c.known[id] = ext
		}
	}
}
