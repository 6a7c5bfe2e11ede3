package talosconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultFactoryURL is the public Talos Image Factory.
const DefaultFactoryURL = "https://factory.talos.dev"

// Schematic is an Image Factory customization: official system extensions,
// extra kernel arguments and initial META values.
type Schematic struct {
	// Extensions are official extension names such as
	// "siderolabs/qemu-guest-agent". Order matters to the ID.
	Extensions []string
	// KernelArgs are extra kernel command line arguments.
	KernelArgs []string
	// Meta are initial META partition values (key 0-255).
	Meta []MetaValue
}

// MetaValue is one META key and value.
type MetaValue struct {
	Key   uint8
	Value string
}

// factorySchematic has the shape, field order and YAML tags of
// siderolabs/image-factory pkg/schematic.Schematic, and is marshalled with
// the same library (gopkg.in/yaml.v3): the ID is the sha256 of exactly these
// bytes. Fields we do not offer (overlay, secureboot) are zero and omitted
// there too.
type factorySchematic struct {
	Overlay       factoryOverlay       `yaml:"overlay,omitempty"`
	Customization factoryCustomization `yaml:"customization"`
}

type factoryOverlay struct {
	Image string `yaml:"image"`
	Name  string `yaml:"name"`
}

type factoryCustomization struct {
	ExtraKernelArgs  []string                `yaml:"extraKernelArgs,omitempty"`
	Meta             []factoryMetaValue      `yaml:"meta,omitempty"`
	SystemExtensions factorySystemExtensions `yaml:"systemExtensions,omitempty"`
}

type factoryMetaValue struct {
	Key   uint8  `yaml:"key"`
	Value string `yaml:"value"`
}

type factorySystemExtensions struct {
	OfficialExtensions []string `yaml:"officialExtensions,omitempty"`
}

var extensionName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*$`)

// Check reports malformed or duplicate extension names and empty kernel
// arguments.
func (s Schematic) Check() error {
	seen := map[string]bool{}
	for i, e := range s.Extensions {
		if !extensionName.MatchString(e) {
			return fmt.Errorf("extension %d (%q) is not an official extension name: write it as <owner>/<name>, for example siderolabs/qemu-guest-agent", i, e)
		}
		if seen[e] {
			return fmt.Errorf("extension %q is listed twice", e)
		}
		seen[e] = true
	}
	for i, a := range s.KernelArgs {
		if strings.TrimSpace(a) == "" || strings.ContainsAny(a, " \t\n") {
			return fmt.Errorf("kernel argument %d (%q) must be one non-empty word such as console=ttyS0", i, a)
		}
	}
	return nil
}

// YAML returns the schematic as the Image Factory marshals it (the body to
// POST to /schematics).
func (s Schematic) YAML() ([]byte, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	fs := factorySchematic{Customization: factoryCustomization{
		ExtraKernelArgs:  s.KernelArgs,
		SystemExtensions: factorySystemExtensions{OfficialExtensions: s.Extensions},
	}}
	for _, m := range s.Meta {
		fs.Customization.Meta = append(fs.Customization.Meta, factoryMetaValue(m))
	}
	return yaml.Marshal(fs)
}

// ID returns the schematic ID the Image Factory assigns: the hex sha256 of
// the marshalled schematic (image-factory pkg/schematic Schematic.ID).
func (s Schematic) ID() (string, error) {
	b, err := s.YAML()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// FactoryOptions say where images come from.
type FactoryOptions struct {
	// BaseURL of the Image Factory or of a mirror of it; default DefaultFactoryURL.
	BaseURL string
	// InstallerRegistry is the registry (host[:port][/path]) serving installer
	// images; default the BaseURL's host and path, as the Image Factory is
	// also a registry.
	InstallerRegistry string
	// Platform is the Talos platform; default "nocloud" (addresses from
	// Proxmox cloud-init).
	Platform string
	// Arch is amd64 (default) or arm64.
	Arch string
}

// FactoryImages are the artifacts of one schematic and Talos version.
type FactoryImages struct {
	SchematicID string
	// ISO boots a VM into maintenance mode (…/<platform>-<arch>.iso).
	ISO string
	// DiskRawXZ and DiskQCOW2 are disk images of the same system.
	DiskRawXZ string
	DiskQCOW2 string
	// Installer is the platform installer image for machine.install.image and
	// upgrades: <registry>/<platform>-installer/<id>:<version>.
	Installer string
}

// FactoryURLs returns the artifact URLs of a schematic for a Talos version.
// Nothing is fetched.
func FactoryURLs(schematicID, talosVersion string, opts FactoryOptions) (FactoryImages, error) {
	if !schematicIDPattern.MatchString(schematicID) {
		return FactoryImages{}, fmt.Errorf("schematic ID %q is not 64 lowercase hex characters", schematicID)
	}
	v, err := ParseRelease(talosVersion)
	if err != nil {
		return FactoryImages{}, fmt.Errorf("talos version: %w", err)
	}
	tag := TalosTag(v)
	base, registry, platform, arch, err := resolveFactory(opts)
	if err != nil {
		return FactoryImages{}, err
	}
	image := func(file string) string {
		return base + "/image/" + schematicID + "/" + tag + "/" + file
	}
	stem := platform + "-" + arch
	return FactoryImages{
		SchematicID: schematicID,
		ISO:         image(stem + ".iso"),
		DiskRawXZ:   image(stem + ".raw.xz"),
		DiskQCOW2:   image(stem + ".qcow2"),
		Installer:   registry + "/" + platform + "-installer/" + schematicID + ":" + tag,
	}, nil
}

var (
	schematicIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
	platformPattern    = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

func resolveFactory(opts FactoryOptions) (base, registry, platform, arch string, err error) {
	base = strings.TrimRight(opts.BaseURL, "/")
	if base == "" {
		base = DefaultFactoryURL
	}
	u, perr := url.Parse(base)
	if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", "", "", fmt.Errorf("image factory URL %q is not an http(s) base URL such as %s", opts.BaseURL, DefaultFactoryURL)
	}
	registry = strings.TrimRight(opts.InstallerRegistry, "/")
	if registry == "" {
		registry = u.Host + strings.TrimRight(u.Path, "/")
	}
	if strings.Contains(registry, "://") || strings.ContainsAny(registry, " :@") && !hostPort.MatchString(registry) {
		return "", "", "", "", fmt.Errorf("installer registry %q must be host[:port][/path] without a scheme, for example registry.example.com:5000/factory", opts.InstallerRegistry)
	}
	platform = opts.Platform
	if platform == "" {
		platform = "nocloud"
	}
	if !platformPattern.MatchString(platform) {
		return "", "", "", "", fmt.Errorf("platform %q is not a Talos platform name such as nocloud or metal", platform)
	}
	arch = opts.Arch
	if arch == "" {
		arch = "amd64"
	}
	if arch != "amd64" && arch != "arm64" {
		return "", "", "", "", fmt.Errorf("architecture %q is not amd64 or arm64", arch)
	}
	return base, registry, platform, arch, nil
}

var hostPort = regexp.MustCompile(`^[A-Za-z0-9.-]+:[0-9]+(/[A-Za-z0-9._/-]+)?$`)

// FactoryImage is what an Image Factory artifact URL or installer reference
// names.
type FactoryImage struct {
	// Base is the factory (or mirror) URL for HTTP artifacts, or the registry
	// for installer images.
	Base         string
	SchematicID  string
	TalosVersion string // "v1.12.5"
	Platform     string // "nocloud", "metal", ...
	Arch         string // "amd64", "arm64"; empty for installer images (multi-arch)
	// Kind is "iso", a disk image suffix ("raw.xz", "qcow2", ...) or "installer".
	Kind       string
	SecureBoot bool
}

// ParseFactoryURL reads an Image Factory artifact URL
// (<base>/image/<schematic>/<version>/<platform>-<arch>[-secureboot].<kind>)
// or an installer reference (<registry>/<platform>-installer[-secureboot]/<schematic>:<version>),
// the reverse of FactoryURLs. Proxmox's download-url may add a file name;
// only the URL is read.
func ParseFactoryURL(ref string) (FactoryImage, error) {
	if m := artifactURL.FindStringSubmatch(ref); m != nil {
		img := FactoryImage{Base: m[1], SchematicID: m[2], TalosVersion: m[3]}
		file := m[4]
		for _, kind := range []string{"iso", "raw.xz", "raw.zst", "raw.gz", "raw", "qcow2", "vhd", "ova"} {
			if stem, ok := strings.CutSuffix(file, "."+kind); ok {
				img.Kind = kind
				file = stem
				break
			}
		}
		if img.Kind == "" {
			return FactoryImage{}, fmt.Errorf("image factory URL %q names no known artifact (iso, raw.xz, qcow2, ...)", ref)
		}
		file, img.SecureBoot = strings.CutSuffix(file, "-secureboot")
		i := strings.LastIndex(file, "-")
		if i <= 0 {
			return FactoryImage{}, fmt.Errorf("image factory URL %q does not name <platform>-<arch>", ref)
		}
		img.Platform, img.Arch = file[:i], file[i+1:]
		if img.Arch != "amd64" && img.Arch != "arm64" {
			return FactoryImage{}, fmt.Errorf("image factory URL %q names architecture %q, not amd64 or arm64", ref, img.Arch)
		}
		return img, nil
	}
	if m := installerRef.FindStringSubmatch(ref); m != nil {
		img := FactoryImage{Base: m[1], SchematicID: m[4], TalosVersion: m[5], Kind: "installer", SecureBoot: m[3] != ""}
		img.Platform = strings.TrimSuffix(m[2], "-")
		if img.Platform == "" {
			img.Platform = "metal" // the generic installer is the metal one
		}
		return img, nil
	}
	return FactoryImage{}, fmt.Errorf("%q is neither an Image Factory artifact URL (<base>/image/<schematic>/<version>/<platform>-<arch>.iso) "+
		"nor an installer reference (<registry>/<platform>-installer/<schematic>:<version>)", ref)
}

var (
	artifactURL  = regexp.MustCompile(`^(https?://[^?#]+?)/image/([0-9a-f]{64})/(v[0-9][^/]*)/([^/?#]+)$`)
	installerRef = regexp.MustCompile(`^([^/]+(?:/[^/]+)*?)/([a-z0-9-]*-|)installer(-secureboot)?/([0-9a-f]{64}):(v[0-9][^/@]*)$`)
)
