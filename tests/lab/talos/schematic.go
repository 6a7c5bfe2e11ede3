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
// cannot be asked (no network), and an ID cannot be reversed, so a catalog
// knows the empty schematic, every ordered selection of up to
// MaxCatalogExtensions OfficialExtensions (users list extensions in any
// order, and order changes the ID), and whatever tests register.
type Catalog struct {
	mu    sync.Mutex
	known map[string][]string
}

// NewCatalog returns a catalog.
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

// RegisterSchematic makes a schematic ID known with the official extensions
// its schematic lists: for schematics Register cannot compute (kernel
// arguments, META, overlays...), as the lab's Image Factory registers them.
func (c *Catalog) RegisterSchematic(id string, extensions []string) {
	c.mu.Lock()
	defer c.mu.Unlock()

	c.known[id] = slices.Clone(extensions)
}

// Lookup returns the extensions of a schematic ID; ok is false for IDs the
// catalog does not know. The empty ID ("", vanilla release assets) has none.
func (c *Catalog) Lookup(id string) (extensions []string, ok bool) {
	if id == "" {
		return nil, true
	}

	c.mu.Lock()
	ext, ok := c.known[id]
	c.mu.Unlock()

	if ok {
		return slices.Clone(ext), true
	}

	return lookupOfficial(id)
}

// selection is an ordered choice of official extensions (indexes, -1 = none).
type selection [MaxCatalogExtensions]int8

var official struct {
	once sync.Once
	ids  map[[sha256.Size]byte]selection
}

func lookupOfficial(id string) ([]string, bool) {
	official.once.Do(precomputeOfficial)

	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != sha256.Size {
		return nil, false
	}

	sel, ok := official.ids[[sha256.Size]byte(raw)]
	if !ok {
		return nil, false
	}

	var out []string

	for _, i := range sel {
		if i >= 0 {
			out = append(out, OfficialExtensions[i])
		}
	}

	return out, true
}

// precomputeOfficial hashes every ordered selection (about 123k of them);
// the schematic YAML is built by hand for speed (schematicYAML matches
// yaml.v3's output, see the tests).
func precomputeOfficial() {
	ids := map[[sha256.Size]byte]selection{}

	var (
		chosen []int
		walk   func()
	)

	walk = func() {
		var sel selection
		for i := range sel {
			sel[i] = -1
		}

		names := make([]string, len(chosen))
		for i, c := range chosen {
			sel[i] = int8(c)
			names[i] = OfficialExtensions[c]
		}

		ids[sha256.Sum256(schematicYAML(names))] = sel

		if len(chosen) == MaxCatalogExtensions {
			return
		}

		for i := range OfficialExtensions {
			if !slices.Contains(chosen, i) {
				chosen = append(chosen, i)
				walk()
				chosen = chosen[:len(chosen)-1]
			}
		}
	}

	walk()

	official.ids = ids
}

// schematicYAML is yaml.v3's marshalling of a schematic holding only
// official extensions whose names need no quoting.
func schematicYAML(extensions []string) []byte {
	if len(extensions) == 0 {
		return []byte("customization: {}\n")
	}

	b := []byte("customization:\n    systemExtensions:\n        officialExtensions:\n")
	for _, e := range extensions {
		b = append(b, "            - "...)
		b = append(b, e...)
		b = append(b, '\n')
	}

	return b
}
