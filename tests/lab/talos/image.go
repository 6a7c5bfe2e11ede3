package talos

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"
)

// Platform names as Talos knows them (talos.platform kernel argument).
const (
	PlatformNocloud = "nocloud"
	PlatformMetal   = "metal"
)

// Image is what a boot medium or an installer image holds: a Talos version
// built from one Image Factory schematic for one platform.
type Image struct {
	Version   string // "v1.12.5"
	Schematic string // schematic ID; "" for vanilla GitHub release assets
	Platform  string // nocloud, metal, ...
	Source    string // the URL or image reference it came from
}

func (img Image) String() string {
	s := img.Schematic
	if len(s) > 12 {
		s = s[:12]
	}

	if s == "" {
		s = "vanilla"
	}

	return fmt.Sprintf("Talos %s %s (schematic %s)", img.Version, img.Platform, s)
}

// schematicRe matches an Image Factory schematic ID (hex sha256).
var schematicRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Factory asset names: "<platform>-<arch>[-secureboot].<ext>".
// See the Image Factory HTTP frontend: /image/<schematic>/<version>/<asset>.
var factoryAssetRe = regexp.MustCompile(`^([a-z0-9]+)-(amd64|arm64)(-secureboot)?\.(iso|raw\.xz|raw\.zst|raw|qcow2|qcow2\.xz|vmdk|ova)$`)

// ParseBootURL says which Talos image a downloaded ISO or disk image holds,
// from the URL it was downloaded from. It understands Image Factory URLs
// (https://<factory>/image/<schematic>/<version>/<platform>-<arch>.<ext>) and
// GitHub release assets (.../siderolabs/talos/releases/download/<version>/<platform>-<arch>.<ext>),
// which carry no extensions. Anything else is not a Talos image.
func ParseBootURL(raw string) (Image, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Image{}, fmt.Errorf("%q is not a URL", raw)
	}

	parts := strings.Split(strings.Trim(u.Path, "/"), "/")

	var version, schematic, asset string

	switch {
	case len(parts) >= 4 && parts[len(parts)-4] == "image":
		schematic, version, asset = parts[len(parts)-3], parts[len(parts)-2], parts[len(parts)-1]
		if !schematicRe.MatchString(schematic) {
			return Image{}, fmt.Errorf("%q: %q is not an Image Factory schematic ID", raw, schematic)
		}
	case len(parts) >= 6 && parts[len(parts)-4] == "releases" && parts[len(parts)-3] == "download" &&
		parts[len(parts)-5] == "talos":
		version, asset = parts[len(parts)-2], parts[len(parts)-1]
	default:
		return Image{}, fmt.Errorf("%q is neither an Image Factory image nor a Talos release asset", raw)
	}

	if err := checkVersion(version); err != nil {
		return Image{}, fmt.Errorf("%q: %w", raw, err)
	}

	m := factoryAssetRe.FindStringSubmatch(asset)
	if m == nil {
		return Image{}, fmt.Errorf("%q: %q is not a Talos boot asset name like nocloud-amd64.iso", raw, asset)
	}

	if m[2] != "amd64" {
		return Image{}, fmt.Errorf("%q: %s images do not boot on the lab's x86_64 VMs", raw, m[2])
	}

	return Image{Version: version, Schematic: schematic, Platform: m[1], Source: raw}, nil
}

// IsISO reports whether a boot URL names an ISO (as opposed to a disk image).
func IsISO(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}

	return strings.HasSuffix(u.Path, ".iso")
}

// ParseInstallerRef says which Talos image an installer container image
// reference installs. Forms understood:
//   - <factory>/installer/<schematic>:<version>            metal
//   - <factory>/<platform>-installer/<schematic>:<version>  e.g. nocloud-installer (Talos 1.10+)
//   - <factory>/installer-secureboot/<schematic>:<version>, <platform>-installer-secureboot/...
//   - ghcr.io/siderolabs/installer:<version>                vanilla metal
//
// The Image Factory's registry frontend serves these names; a reference that
// matches none of them is an image the lab cannot "pull".
func ParseInstallerRef(ref string) (Image, error) {
	ref, _, _ = strings.Cut(ref, "@") // a digest does not change what the tag names

	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")

	if colon <= slash || colon == len(ref)-1 {
		return Image{}, fmt.Errorf("installer image %q has no version tag", ref)
	}

	name, tag := ref[:colon], ref[colon+1:]

	if err := checkVersion(tag); err != nil {
		return Image{}, fmt.Errorf("installer image %q: %w", ref, err)
	}

	parts := strings.Split(name, "/")

	if name == "ghcr.io/siderolabs/installer" || name == "ghcr.io/siderolabs/installer-base" {
		return Image{Version: tag, Platform: PlatformMetal, Source: ref}, nil
	}

	if len(parts) < 3 {
		return Image{}, fmt.Errorf("installer image %q is neither an Image Factory installer nor ghcr.io/siderolabs/installer", ref)
	}

	repo, schematic := parts[len(parts)-2], parts[len(parts)-1]
	if !schematicRe.MatchString(schematic) {
		return Image{}, fmt.Errorf("installer image %q: %q is not an Image Factory schematic ID", ref, schematic)
	}

	repo = strings.TrimSuffix(repo, "-secureboot")

	platform := ""

	switch {
	case repo == "installer":
		platform = PlatformMetal
	case strings.HasSuffix(repo, "-installer"):
		platform = strings.TrimSuffix(repo, "-installer")
	default:
		return Image{}, fmt.Errorf("installer image %q: repository %q is not an installer", ref, repo)
	}

	return Image{Version: tag, Schematic: schematic, Platform: platform, Source: ref}, nil
}

// checkVersion accepts the Talos versions the lab simulates: v1.x.y.
func checkVersion(v string) error {
	if !strings.HasPrefix(v, "v") {
		return fmt.Errorf("version %q must look like v1.12.5", v)
	}

	sv, err := semver.Parse(strings.TrimPrefix(v, "v"))
	if err != nil {
		return fmt.Errorf("version %q is not a semantic version: %w", v, err)
	}

	if sv.Major != 1 {
		return fmt.Errorf("version %q is not a Talos 1.x version", v)
	}

	return nil
}
