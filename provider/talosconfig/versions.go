package talosconfig

import (
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/constants"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosrelease"
)

// Talos minors this package generates configurations for. The pinned
// machinery (v1.13.9) describes releases up to 1.13; 1.14's rules come from
// talosrelease's table of its tag. Releases older than 1.8 are out of
// upstream support and have no default Kubernetes version below.
const (
	minTalosMinor = 8
	maxTalosMinor = 14
)

// maxContractMinor is the newest configuration contract generated: the
// newest machinery v1.13.9 knows (config/contract.go). The 1.14 contract
// moves the install, kubelet, Kubernetes control plane, network, sysctl and
// discovery settings out of the v1alpha1 document into new ones
// (UnattendedInstallConfig, KubeletConfig, KubeAPIServerConfig, ...;
// config/generate/init.go at v1.14.1), and Talos refuses a configuration
// that sets both forms ("kubelet config is already set in v1alpha1 config
// (.machine.kubelet)", config/types/k8s/kubelet.go at v1.14.1). The
// configurations this package writes, and the patches users wrote for them,
// use the v1alpha1 fields; a 1.14 node runs a 1.13-contract configuration
// as it is (Talos keeps older contracts valid), so 1.14 nodes get the 1.13
// contract, and patches bringing 1.14-only documents are refused (see
// checkNewerDocuments).
const maxContractMinor = 13

// defaultKubernetes is the Kubernetes version each Talos minor defaults to:
// pkg/machinery/constants/constants.go DefaultKubernetesVersion at the newest
// patch tag of each line in siderolabs/talos (v1.8.4, v1.9.6, v1.10.9,
// v1.11.6, v1.12.7); 1.13 is the pinned machinery's own constant, 1.14
// talosrelease's row of its tag (v1.14.1). The range each minor supports is
// its compatibility/talos1xx (MinimumKubernetesVersion ..
// MaximumKubernetesVersion), the support matrix of
// docs.siderolabs.com/talos/v1.xx/getting-started/support-matrix.
var defaultKubernetes = map[uint64]string{
	8:  "1.31.4",
	9:  "1.32.4",
	10: "1.33.6",
	11: "1.34.1",
	12: "1.35.4",
	13: constants.DefaultKubernetesVersion,
	14: talosrelease.NewerDefaultKubernetes(14),
}

// newestPatch is the newest patch of each Talos minor known to this package
// (the newest machinery tag the Go module proxy serves): the version an
// upgrade path stops at.
var newestPatch = map[uint64]string{
	8:  "v1.8.4",
	9:  "v1.9.6",
	10: "v1.10.9",
	11: "v1.11.6",
	12: "v1.12.7",
	13: "v1.13.9",
	14: talosrelease.NewerTag(14),
}

// KubernetesMinors returns the Kubernetes minor versions a Talos minor
// supports, oldest first.
func KubernetesMinors(talosMinor uint64) []uint64 {
	r, ok := talosrelease.Of(talosMinor)
	if !ok {
		return nil
	}
	var out []uint64
	for m := r.MinKubernetes.Minor; m <= r.MaxKubernetes.Minor; m++ {
		out = append(out, m)
	}
	return out
}

// DefaultTalosVersion is the newest Talos release this provider knows (the
// newest patch of the newest minor): the default of every talosVersion input.
var DefaultTalosVersion = newestPatch[maxTalosMinor]

// SupportedTalosVersions describes, for messages and docs, which Talos versions
// configurations can be generated for.
const SupportedTalosVersions = "v1.8.0 to v1.14.x"

// ParseVersion parses a Talos or Kubernetes version with or without a leading
// "v" ("v1.12.5", "1.12.5", "1.12").
func ParseVersion(v string) (semver.Version, error) {
	s := strings.TrimSpace(v)
	if s == "" {
		return semver.Version{}, fmt.Errorf("version is empty: give one such as v1.12.5")
	}
	parsed, err := semver.ParseTolerant(s)
	if err != nil {
		return semver.Version{}, fmt.Errorf("version %q is not a semantic version such as v1.12.5: %w", v, err)
	}
	return parsed, nil
}

// TalosTag formats a Talos version the way Talos tags releases: "v1.12.5".
func TalosTag(v semver.Version) string { return "v" + v.String() }

// CheckTalosVersion parses a Talos version and checks that configurations can
// be generated for it.
func CheckTalosVersion(talosVersion string) (semver.Version, error) {
	v, err := ParseVersion(talosVersion)
	if err != nil {
		return v, fmt.Errorf("talos version: %w", err)
	}
	if v.Major != 1 || v.Minor < minTalosMinor || v.Minor > maxTalosMinor {
		return v, fmt.Errorf("talos version %s is not supported: this provider generates configurations for Talos %s; "+
			"pick a version in that range (the newest is %s) or upgrade the provider for newer Talos releases",
			TalosTag(v), SupportedTalosVersions, DefaultTalosVersion)
	}
	return v, nil
}

// VersionContract returns the configuration contract for a node that runs
// talosVersion. The contract is never newer than the node: a 1.12 contract
// writes keys (for example grubUseUKICmdline) that a 1.11 node refuses. It
// is at most maxContractMinor.
func VersionContract(talosVersion string) (*config.VersionContract, error) {
	v, err := CheckTalosVersion(talosVersion)
	if err != nil {
		return nil, err
	}
	return &config.VersionContract{Major: int(v.Major), Minor: int(min(v.Minor, maxContractMinor))}, nil
}

// CheckKubernetesVersion checks that a Talos version supports a Kubernetes
// version, with machinery's rule over each release's compatibility/talos1xx
// (talosrelease).
func CheckKubernetesVersion(talosVersion, kubernetesVersion string) error {
	tv, err := CheckTalosVersion(talosVersion)
	if err != nil {
		return err
	}
	kv, err := ParseVersion(kubernetesVersion)
	if err != nil {
		return fmt.Errorf("kubernetes version: %w", err)
	}
	if err := talosrelease.KubernetesSupported(tv, kv); err != nil {
		minors := KubernetesMinors(tv.Minor)
		return fmt.Errorf("%w: Talos %d.%d runs Kubernetes 1.%d to 1.%d (support matrix) and defaults to %s; pick one of those or another Talos version",
			err, tv.Major, tv.Minor, minors[0], minors[len(minors)-1], defaultKubernetes[tv.Minor])
	}
	return nil
}

// DefaultKubernetesVersion returns the Kubernetes version (without "v") that
// the given Talos release line ships as its default.
func DefaultKubernetesVersion(talosVersion string) (string, error) {
	v, err := CheckTalosVersion(talosVersion)
	if err != nil {
		return "", err
	}
	return defaultKubernetes[v.Minor], nil
}

// NormalizeKubernetesVersion returns a Kubernetes version without a leading
// "v", the form machinery puts after "…/kubelet:v".
func NormalizeKubernetesVersion(kubernetesVersion string) (string, error) {
	v, err := ParseVersion(kubernetesVersion)
	if err != nil {
		return "", fmt.Errorf("kubernetes version: %w", err)
	}
	return v.String(), nil
}

// CheckUpgrade checks a Talos OS upgrade (or downgrade) of a node running
// from to the version to, and refuses what Talos refuses or advises against,
// naming the version to take instead:
//   - what the node itself refuses (machinery compatibility
//     TalosVersion.UpgradeableFrom, the check the installer runs, over
//     talosrelease's rules);
//   - a jump over a minor release: Talos tests upgrades only between
//     adjacent minors and says to stop at the latest patch of every
//     intermediate minor ("Supported upgrade paths" in
//     docs.siderolabs.com/talos/v1.14/configure-your-talos-cluster/lifecycle-management/upgrading-talos).
//   - a move to an older minor release (see checkDowngrade).
//
// A move to another patch of the same minor passes either way.
func CheckUpgrade(from, to string) error {
	fv, err := ParseVersion(from)
	if err != nil {
		return fmt.Errorf("current talos version: %w", err)
	}
	tv, err := CheckTalosVersion(to)
	if err != nil {
		return err
	}
	if fv.EQ(tv) {
		return nil
	}
	if err := checkDowngrade(fv, tv); err != nil {
		return err
	}
	next := nextStep(fv, tv)
	if err := talosrelease.UpgradeableFrom(tv, fv); err != nil {
		return fmt.Errorf("a node running Talos %s refuses to move to %s (%w); go through each minor release: set talosVersion to %s first",
			TalosTag(fv), TalosTag(tv), err, next)
	}
	if next != TalosTag(tv) {
		return fmt.Errorf("Talos %s to %s skips a minor release: Talos supports upgrades between adjacent minor releases only, "+
			"stopping at the latest patch of each; set talosVersion to %s first, then to %s",
			TalosTag(fv), TalosTag(tv), next, TalosTag(tv))
	}
	return nil
}

// checkDowngrade refuses a move to an older Talos minor release. Talos
// refuses it on the node when the older release is more than one minor back
// (compatibility TalosVersion.UpgradeableFrom: "host version 1.14.1 is too
// new to downgrade to Talos 1.12.7"), when the running configuration holds a
// document the older release does not register (the older installer fails
// with "error loading machine configuration ... not registered", pinned by
// siderolabs/talos v1.14.1 internal/integration/cli/upgrade.go
// TestIncompatibleMachineConfig), and when the cluster runs a Kubernetes
// the older release does not support (its RuntimeValidate). One minor back
// with none of those, the installer would go ahead, but Talos documents and
// tests only upgrades between adjacent minors ("Supported upgrade paths" in
// upgrading-talos), and a whole cluster moved back node by node is no
// rollback: each node's own previous install is what `talosctl rollback`
// boots. So a declarative talosVersion never moves a cluster to an older
// minor; it names the versions it may take instead.
func checkDowngrade(from, to semver.Version) error {
	if to.Major != from.Major || to.Minor >= from.Minor {
		return nil
	}
	why := "Talos supports upgrades between adjacent minor releases, not downgrades"
	if err := talosrelease.UpgradeableFrom(to, from); err != nil {
		why = "the node refuses it: " + err.Error()
	}
	return fmt.Errorf("Talos %s to %s is a downgrade to an older minor release (%s); keep talosVersion on Talos %d.%d: "+
		"%s (its newest known patch) or another %d.%d patch, or a newer release. To undo an upgrade on one node, "+
		"`talosctl rollback` boots that node's previous install",
		TalosTag(from), TalosTag(to), why, from.Major, from.Minor, newestPatchOf(from.Minor), from.Major, from.Minor)
}

// nextStep is the version the path from one Talos version to another takes
// next: the target itself within one minor release, else the newest known
// patch of the adjacent minor towards it.
func nextStep(from, to semver.Version) string {
	switch {
	case to.Major != from.Major:
		return TalosTag(to)
	case to.Minor > from.Minor+1:
		return newestPatchOf(from.Minor + 1)
	case to.Minor+1 < from.Minor:
		return newestPatchOf(from.Minor - 1)
	default:
		return TalosTag(to)
	}
}

func newestPatchOf(minor uint64) string {
	if v, ok := newestPatch[minor]; ok {
		return v
	}
	return fmt.Sprintf("v1.%d (its latest patch)", minor)
}

// ImageTagVersion reads the Talos version from an image reference's tag
// ("factory.talos.dev/nocloud-installer/<id>:v1.12.5", a digest after @
// ignored); false when the tag is absent or not a v-prefixed version.
func ImageTagVersion(image string) (semver.Version, bool) {
	_, tag := splitImageRef(image)
	if !strings.HasPrefix(tag, "v") {
		return semver.Version{}, false
	}
	v, err := semver.ParseTolerant(tag)
	return v, err == nil
}

// splitImageRef splits an image reference into its repository and its tag
// ("" without one); a digest after @ is dropped. A colon before the last
// slash is a registry port, not a tag.
func splitImageRef(ref string) (repo, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	if slash, colon := strings.LastIndex(ref, "/"), strings.LastIndex(ref, ":"); colon > slash {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}

// checkImageAgainstContract refuses an installer image whose Talos minor is
// older than the configuration contract: the installed node would run that
// older Talos and refuse the newer keys (see VersionContract).
func checkImageAgainstContract(image string, contract *config.VersionContract, talosVersion string) error {
	v, ok := ImageTagVersion(image)
	if !ok {
		return nil // no version in the tag: nothing to compare
	}
	imageContract := &config.VersionContract{Major: int(v.Major), Minor: int(v.Minor)}
	if !contract.Greater(imageContract) {
		return nil
	}
	return fmt.Errorf("install image %s installs Talos %s, older than the v%d.%d configuration contract of talos version %s: "+
		"the installed node would refuse the newer keys. Use an installer image for %s (getImageFactory installerImage "+
		"with the same talosVersion), or generate for the image's version", image, TalosTag(v), contract.Major, contract.Minor,
		talosVersion, talosVersion)
}
