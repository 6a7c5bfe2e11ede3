package talosconfig

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
)

// ParseRelease parses a version that names one release: major, minor and
// patch ("v1.12.5", "1.12.5", "v1.13.0-beta.1"). A Talos or Kubernetes
// version of a node, an installer image or an upgrade is a release; "1.12"
// names a release line, which ParseVersion would silently read as 1.12.0
// (a release that may be older than the user means, or not exist), so it is
// refused with the release this provider knows on that line.
func ParseRelease(v string) (semver.Version, error) {
	s := strings.TrimPrefix(strings.TrimSpace(v), "v")
	core, _, _ := strings.Cut(strings.SplitN(s, "+", 2)[0], "-")
	if parts := strings.Split(core, "."); len(parts) < 3 && numeric(parts) {
		return semver.Version{}, fmt.Errorf("%q names a release line, not a release: write the full version, like %s", v, releaseExample(parts))
	}
	return ParseVersion(v)
}

// numeric reports whether every part is a number ("1", "12"), so that
// "latest" or "" get ParseVersion's error rather than "release line".
func numeric(parts []string) bool {
	for _, p := range parts {
		if _, err := strconv.ParseUint(p, 10, 64); err != nil {
			return false
		}
	}
	return len(parts) > 0
}

// releaseExample is a release on the line a partial version names, from the
// versions the provider knows (the newest patch of each Talos line, each
// Talos line's default Kubernetes), or a made-up patch release when it
// knows none.
func releaseExample(parts []string) string {
	var known []string
	for _, t := range newestPatch {
		known = append(known, t)
	}
	for _, k := range defaultKubernetes {
		known = append(known, "v"+strings.TrimPrefix(k, "v"))
	}
	prefix := "v" + strings.Join(parts, ".") + "."
	for _, k := range known {
		if len(parts) == 2 && strings.HasPrefix(k, prefix) {
			return k
		}
	}
	if len(parts) == 2 {
		return prefix + "0"
	}
	return "v1.12.5"
}
