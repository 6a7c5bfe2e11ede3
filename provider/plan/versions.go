package plan

import (
	"fmt"

	"github.com/blang/semver/v4"
)

// VersionRules are the Talos/Kubernetes version rules. They live in
// provider/talosconfig (built on machinery's compatibility package); the plan
// only calls them, so the rules exist once.
type VersionRules interface {
	// DefaultTalosVersion is used when the spec names none.
	DefaultTalosVersion() string
	// DefaultKubernetesVersion is the Kubernetes version a Talos version
	// installs by default.
	DefaultKubernetesVersion(talos string) (string, error)
	// CheckVersions fails when configs cannot be generated for the Talos
	// version or it does not support the Kubernetes version; the error says
	// which versions would work.
	CheckVersions(talos, kubernetes string) error
	// CheckTalosUpgrade fails for an upgrade path Talos does not support.
	CheckTalosUpgrade(from, to string) error
	// CheckKubernetesUpgrade fails for a Kubernetes upgrade that skips a minor
	// version or goes backwards.
	CheckKubernetesUpgrade(from, to string) error
}

// canonicalVersion turns "1.12.5" or "v1.12.5" into "v1.12.5".
func canonicalVersion(v string) (string, error) {
	sv, err := semver.ParseTolerant(v)
	if err != nil {
		return "", fmt.Errorf("%q is not a version like v1.12.5", v)
	}
	return "v" + sv.String(), nil
}
