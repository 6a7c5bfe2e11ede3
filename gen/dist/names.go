package main

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
)

// Platform is one os/arch pair the provider plugin is released for.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "-" + p.Arch }

// platforms are those Pulumi's own providers ship (pulumi-command's .goreleaser.yml).
var platforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

func hostPlatform() Platform { return Platform{runtime.GOOS, runtime.GOARCH} }

// pluginName is the provider's plugin name.
const pluginName = provider.Name

// binaryName is the executable inside an archive: the engine runs pulumi-resource-<name>
// (with .exe on Windows) from the folder it extracted the archive into.
func binaryName(p Platform) string {
	if p.OS == "windows" {
		return "pulumi-resource-" + pluginName + ".exe"
	}
	return "pulumi-resource-" + pluginName
}

// archiveName is the asset name the engine asks a download server for
// (pulumi-<kind>-<name>-v<version>-<os>-<arch>.tar.gz; sdk/go/common/workspace/plugins.go).
func archiveName(version string, p Platform) string {
	return fmt.Sprintf("pulumi-resource-%s-v%s-%s-%s.tar.gz", pluginName, version, p.OS, p.Arch)
}

// archivePattern matches any plugin archive name, to find stale ones of another version.
var archivePattern = regexp.MustCompile(`^pulumi-resource-` + pluginName + `-v(.+)-([a-z]+)-([a-z0-9]+)\.tar\.gz$`)

// checksumsName is the sha256sum-format file covering every artifact of a release.
func checksumsName(version string) string {
	return fmt.Sprintf("%s_%s_checksums.txt", pluginName, version)
}

// versionPattern is what VERSION may hold: MAJOR.MINOR.PATCH. Pre-release suffixes are
// left out on purpose: npm, PyPI and Maven spell them differently.
var versionPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// The SDK artifacts' names, as npm pack, pip wheel/sdist and Maven name them.
func npmTarball(version string) string {
	return strings.ReplaceAll(strings.TrimPrefix(provider.NodePackage, "@"), "/", "-") + "-" + version + ".tgz"
}
func wheelName(version string) string {
	return provider.PythonPackage + "-" + version + "-py3-none-any.whl"
}
func sdistName(version string) string { return provider.PythonPackage + "-" + version + ".tar.gz" }

// mavenDir is the artifact's folder in a Maven repository layout (a Central Portal bundle).
func mavenDir(version string) string {
	return "maven/" + strings.ReplaceAll(provider.JavaBasePackage, ".", "/") + "/" + pluginName + "/" + version
}

// mavenFiles are the jar, its sources and javadoc jars and the POM, as Central wants them.
func mavenFiles(version string) []string {
	base := mavenDir(version) + "/" + pluginName + "-" + version
	return []string{base + ".jar", base + "-sources.jar", base + "-javadoc.jar", base + ".pom"}
}
