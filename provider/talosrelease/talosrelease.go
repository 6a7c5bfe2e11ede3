// Package talosrelease knows what each Talos release accepts: which Talos
// versions may upgrade (or downgrade) to it, which Kubernetes versions it
// runs, and the Kubernetes version it defaults to. The rules of the releases
// the pinned machinery describes come from its compatibility/talos1xx
// packages; releases newer than that machinery are tabled here from their
// own tag (see newerReleases), so that the provider and the lab can accept
// them before a machinery of that line can be built here.
package talosrelease

import (
	"fmt"

	"github.com/blang/semver/v4"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos110"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos111"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos112"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos113"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos12"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos13"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos14"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos15"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos16"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos17"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos18"
	"github.com/siderolabs/talos/pkg/machinery/compatibility/talos19"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
)

// Rules are one Talos minor's compatibility constants, as a
// compatibility/talos1xx package of machinery states them.
type Rules struct {
	// MinHostUpgrade is the oldest Talos that can upgrade to this minor.
	MinHostUpgrade semver.Version
	// MaxHostDowngrade is the first Talos (not included) too new to
	// downgrade to this minor.
	MaxHostDowngrade semver.Version
	// DeniedHostUpgrades are Talos versions that may not upgrade to it.
	DeniedHostUpgrades []semver.Version
	// MinKubernetes and MaxKubernetes bound the Kubernetes it runs
	// (MaxKubernetes is 1.x.99: the newest minor, any patch).
	MinKubernetes, MaxKubernetes semver.Version
}

// known holds every Talos minor with rules, keyed by minor (major 1).
var known = map[uint64]Rules{
	2:  {talos12.MinimumHostUpgradeVersion, talos12.MaximumHostDowngradeVersion, talos12.DeniedHostUpgradeVersions, talos12.MinimumKubernetesVersion, talos12.MaximumKubernetesVersion},
	3:  {talos13.MinimumHostUpgradeVersion, talos13.MaximumHostDowngradeVersion, talos13.DeniedHostUpgradeVersions, talos13.MinimumKubernetesVersion, talos13.MaximumKubernetesVersion},
	4:  {talos14.MinimumHostUpgradeVersion, talos14.MaximumHostDowngradeVersion, talos14.DeniedHostUpgradeVersions, talos14.MinimumKubernetesVersion, talos14.MaximumKubernetesVersion},
	5:  {talos15.MinimumHostUpgradeVersion, talos15.MaximumHostDowngradeVersion, talos15.DeniedHostUpgradeVersions, talos15.MinimumKubernetesVersion, talos15.MaximumKubernetesVersion},
	6:  {talos16.MinimumHostUpgradeVersion, talos16.MaximumHostDowngradeVersion, talos16.DeniedHostUpgradeVersions, talos16.MinimumKubernetesVersion, talos16.MaximumKubernetesVersion},
	7:  {talos17.MinimumHostUpgradeVersion, talos17.MaximumHostDowngradeVersion, talos17.DeniedHostUpgradeVersions, talos17.MinimumKubernetesVersion, talos17.MaximumKubernetesVersion},
	8:  {talos18.MinimumHostUpgradeVersion, talos18.MaximumHostDowngradeVersion, talos18.DeniedHostUpgradeVersions, talos18.MinimumKubernetesVersion, talos18.MaximumKubernetesVersion},
	9:  {talos19.MinimumHostUpgradeVersion, talos19.MaximumHostDowngradeVersion, talos19.DeniedHostUpgradeVersions, talos19.MinimumKubernetesVersion, talos19.MaximumKubernetesVersion},
	10: {talos110.MinimumHostUpgradeVersion, talos110.MaximumHostDowngradeVersion, talos110.DeniedHostUpgradeVersions, talos110.MinimumKubernetesVersion, talos110.MaximumKubernetesVersion},
	11: {talos111.MinimumHostUpgradeVersion, talos111.MaximumHostDowngradeVersion, talos111.DeniedHostUpgradeVersions, talos111.MinimumKubernetesVersion, talos111.MaximumKubernetesVersion},
	12: {talos112.MinimumHostUpgradeVersion, talos112.MaximumHostDowngradeVersion, talos112.DeniedHostUpgradeVersions, talos112.MinimumKubernetesVersion, talos112.MaximumKubernetesVersion},
	13: {talos113.MinimumHostUpgradeVersion, talos113.MaximumHostDowngradeVersion, talos113.DeniedHostUpgradeVersions, talos113.MinimumKubernetesVersion, talos113.MaximumKubernetesVersion},
}

func init() {
	for minor, r := range newerReleases {
		known[minor] = r.Rules
	}
}

// Of returns the rules of a Talos minor (major 1).
func Of(minor uint64) (Rules, bool) {
	r, ok := known[minor]
	return r, ok
}

// KubernetesSupported checks that Talos talos runs Kubernetes k8s, with
// machinery's rule and wording (compatibility/kubernetes_version.go
// SupportedWith): patch versions compared, the maximum excluded.
func KubernetesSupported(talos, k8s semver.Version) error {
	r, ok := rulesOf(talos)
	if !ok {
		return fmt.Errorf("compatibility with version %s is not supported", talos)
	}
	if core(k8s).LT(core(r.MinKubernetes)) {
		return fmt.Errorf("version of Kubernetes %s is too old to be used with Talos %s", k8s, talos)
	}
	if core(k8s).GTE(core(r.MaxKubernetes)) {
		return fmt.Errorf("version of Kubernetes %s is too new to be used with Talos %s", k8s, talos)
	}
	return nil
}

// UpgradeableFrom checks that a node running Talos host may install Talos
// target, with machinery's rule and wording (compatibility/talos_version.go
// UpgradeableFrom, the check the installer's pre-flight runs).
func UpgradeableFrom(target, host semver.Version) error {
	r, ok := rulesOf(target)
	if !ok {
		return fmt.Errorf("upgrades to version %s are not supported", target)
	}
	h := core(host)
	if h.LT(core(r.MinHostUpgrade)) {
		return fmt.Errorf("host version %s is too old to upgrade to Talos %s", host, target)
	}
	if h.GTE(core(r.MaxHostDowngrade)) {
		return fmt.Errorf("host version %s is too new to downgrade to Talos %s", host, target)
	}
	for _, d := range r.DeniedHostUpgrades {
		if host.EQ(d) {
			return fmt.Errorf("host version %s is denied for upgrade to Talos %s", host, target)
		}
	}
	return nil
}

// KubernetesFromImage reads the Kubernetes version from an image reference
// ("registry.k8s.io/kube-apiserver:v1.36.3"), as machinery's
// v1alpha1.KubernetesVersionFromImageRef does.
func KubernetesFromImage(ref string) (semver.Version, error) {
	k, err := v1alpha1.KubernetesVersionFromImageRef(ref)
	if err != nil {
		return semver.Version{}, err
	}
	return semver.ParseTolerant(k.String())
}

// KubernetesImageSupported is machinery's ValidateKubernetesImageTag (the
// check of each Kubernetes image a node's RuntimeValidate makes) with the
// node's Talos version in place of the process's own.
func KubernetesImageSupported(talos semver.Version, ref string) error {
	k8s, err := KubernetesFromImage(ref)
	if err != nil {
		return fmt.Errorf("failed to parse Kubernetes version from image reference %q: %w", ref, err)
	}
	return KubernetesSupported(talos, k8s)
}

func rulesOf(v semver.Version) (Rules, bool) {
	if v.Major != 1 {
		return Rules{}, false
	}
	return Of(v.Minor)
}

// core drops pre-release and build parts: machinery compares
// major.minor.patch triples only.
func core(v semver.Version) semver.Version {
	return semver.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
}
