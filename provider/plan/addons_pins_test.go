package plan

import (
	"regexp"
	"testing"
)

// The default add-on manifests name a release tag, never a branch: a branch
// would change the cluster's manifests (and every node's configuration)
// without any change in the user's program.
func TestDefaultManifestsArePinnedToTags(t *testing.T) {
	pinned := regexp.MustCompile(`^https://raw\.githubusercontent\.com/[^/]+/[^/]+/v[0-9]+\.[0-9]+\.[0-9]+/`)
	for name, u := range map[string]string{
		"TalosCCMManifest":            TalosCCMManifest,
		"ServingCertApproverManifest": ServingCertApproverManifest,
		"ProxmoxCCMManifest":          ProxmoxCCMManifest,
	} {
		if !pinned.MatchString(u) {
			t.Errorf("%s = %s does not name a release tag (vX.Y.Z) of its repository", name, u)
		}
	}
}
