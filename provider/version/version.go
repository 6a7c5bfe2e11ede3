// Package version holds the provider version, set at build time by the Makefile
// from the VERSION file so that the binary, the schema and every SDK agree.
package version

import (
	"runtime/debug"
	"strings"
)

// unset is the version of a build that was given none.
const unset = "0.0.0-dev"

// Version is overwritten with -ldflags "-X .../provider/version.Version=..." (make provider,
// make dist). A `go install .../provider/cmd/pulumi-resource-proxmoxtalos@vX.Y.Z` build has
// no ldflags: it takes X.Y.Z from the module version Go records in the binary.
var Version = unset

// Stamp is StampFor(Version) in a release binary: gen/dist sets it with -X beside Version.
// Release builds use -trimpath, which keeps -ldflags out of the build info Go records in a
// binary (cmd/go omits "-ldflags" then, golang/go#52372), so gen/dist's check finds these
// bytes to tell which version a binary is.
var Stamp string

const stampPrefix, stampEnd = "proxmoxtalos-provider-version=", ";"

// StampFor is the Stamp of a build of version v.
func StampFor(v string) string { return stampPrefix + v + stampEnd }

func init() {
	// A build given only the stamp still knows its version.
	if v, ok := strings.CutPrefix(Stamp, stampPrefix); ok && Version == unset {
		Version = strings.TrimSuffix(v, stampEnd)
	}
	if Version != unset {
		return
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		Version = fromModuleVersion(bi.Main.Version)
	}
}

// fromModuleVersion turns the main module's version as Go records it ("v0.2.0" for a
// go install of a tag, "(devel)" or "" for a build inside a checkout) into ours.
func fromModuleVersion(v string) string {
	if !strings.HasPrefix(v, "v") || v == "(devel)" {
		return unset
	}
	return strings.TrimPrefix(v, "v")
}
