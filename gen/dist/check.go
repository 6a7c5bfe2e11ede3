package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
	pversion "github.com/proxmoxtalos/proxmoxtalos/provider/version"
)

// checker collects every way the artifacts disagree with VERSION, to report them at once.
type checker struct {
	root, dist, version string
	problems            []string
}

func (c *checker) fail(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// check verifies the artifacts in dist against VERSION: the plugin archives of the given
// platforms (and no archive of another version), the SDK packages, the Go SDK module in the
// checkout, the schema, and the checksums file. release adds what only a release needs:
// all platforms and a CHANGELOG section for the version.
func check(root, dist, version string, want []Platform, release bool) []string {
	c := &checker{root: root, dist: dist, version: version}
	if !versionPattern.MatchString(version) {
		c.fail("VERSION %q is not MAJOR.MINOR.PATCH", version)
		return c.problems
	}
	c.schema()
	c.goSDK()
	c.plugins(want)
	c.npm()
	c.python()
	c.java()
	c.checksums()
	if release {
		c.changelog()
	}
	return c.problems
}

// pluginInfo is the pulumi-plugin.json / plugin.json every SDK carries: the engine reads it
// to know which plugin a program needs and where to download it.
type pluginInfo struct {
	Resource bool   `json:"resource"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Server   string `json:"server"`
}

func (c *checker) pluginJSON(where string, b []byte) {
	var got pluginInfo
	if err := json.Unmarshal(b, &got); err != nil {
		c.fail("%s: %v", where, err)
		return
	}
	want := pluginInfo{true, pluginName, c.version, provider.PluginDownloadURL}
	if got != want {
		c.fail("%s is %+v, want %+v", where, got, want)
	}
}

func (c *checker) schema() {
	var spec struct {
		Version           string `json:"version"`
		PluginDownloadURL string `json:"pluginDownloadURL"`
	}
	b, err := os.ReadFile(filepath.Join(c.root, "schema", "schema.json"))
	if err == nil {
		err = json.Unmarshal(b, &spec)
	}
	if err != nil {
		c.fail("schema/schema.json: %v", err)
		return
	}
	if spec.Version != c.version || spec.PluginDownloadURL != provider.PluginDownloadURL {
		c.fail("schema/schema.json is version %q with pluginDownloadURL %q: run make schema sdks", spec.Version, spec.PluginDownloadURL)
	}
}

// goSDK: the Go SDK is released by tagging the checkout sdk/v<version> (its module is
// github.com/proxmoxtalos/proxmoxtalos/sdk in sdk/), so what must agree is in the checkout.
func (c *checker) goSDK() {
	mod, err := os.ReadFile(filepath.Join(c.root, "sdk", "go.mod"))
	if err != nil || !bytes.HasPrefix(mod, []byte("module "+modulePath+"/sdk\n")) {
		c.fail("sdk/go.mod is not module %s/sdk (%v): go get %s/sdk@v%s would not resolve", modulePath, err, modulePath, c.version)
	}
	b, err := os.ReadFile(filepath.Join(c.root, "sdk", "go", pluginName, "pulumi-plugin.json"))
	if err != nil {
		c.fail("Go SDK: %v", err)
		return
	}
	c.pluginJSON("sdk/go/"+pluginName+"/pulumi-plugin.json", b)
}

func (c *checker) plugins(want []Platform) {
	entries, err := os.ReadDir(c.dist)
	if err != nil {
		c.fail("%v", err)
		return
	}
	found := map[string]bool{}
	for _, e := range entries {
		m := archivePattern.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		found[e.Name()] = true
		p := Platform{m[2], m[3]}
		if m[1] != c.version || !slices.Contains(platforms, p) {
			c.fail("%s: a plugin archive of another version or platform (VERSION is %s): remove it", e.Name(), c.version)
		}
	}
	for _, p := range want {
		name := archiveName(c.version, p)
		if !found[name] {
			c.fail("%s is missing", name)
			continue
		}
		c.pluginArchive(name, p)
	}
}

// pluginArchive checks one archive: the binary the engine runs, built for the archive's
// platform with VERSION, and the docs beside it.
func (c *checker) pluginArchive(name string, p Platform) {
	files, err := readTarGz(filepath.Join(c.dist, name))
	if err != nil {
		c.fail("%v", err)
		return
	}
	want := append([]string{binaryName(p)}, archiveDocs...)
	got := make([]string, 0, len(files))
	for n := range files {
		got = append(got, n)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		c.fail("%s holds %v, want %v", name, got, want)
	}
	bin, ok := files[binaryName(p)]
	if !ok {
		return
	}
	if bin.mode&0o111 == 0 {
		c.fail("%s: %s is not executable (mode %o)", name, binaryName(p), bin.mode)
	}
	bi, err := buildinfo.Read(bytes.NewReader(bin.data))
	if err != nil {
		c.fail("%s: %s is not a Go binary: %v", name, binaryName(p), err)
		return
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOOS"] != p.OS || settings["GOARCH"] != p.Arch {
		c.fail("%s: the binary is built for %s-%s", name, settings["GOOS"], settings["GOARCH"])
	}
	// -trimpath keeps -ldflags out of the build info: the version is read from the stamp.
	if !bytes.Contains(bin.data, []byte(pversion.StampFor(c.version))) {
		c.fail("%s: the binary's version is not %s (no %q in it)", name, c.version, pversion.StampFor(c.version))
	}
}

func (c *checker) npm() {
	name := npmTarball(c.version)
	files, err := readTarGz(filepath.Join(c.dist, name))
	if err != nil {
		c.fail("npm package: %v", err)
		return
	}
	var pkg struct {
		Name    string     `json:"name"`
		Version string     `json:"version"`
		Pulumi  pluginInfo `json:"pulumi"`
	}
	if err := json.Unmarshal(files["package/package.json"].data, &pkg); err != nil {
		c.fail("%s: package/package.json: %v", name, err)
		return
	}
	if pkg.Name != provider.NodePackage || pkg.Version != c.version {
		c.fail("%s holds %s@%s, want %s@%s", name, pkg.Name, pkg.Version, provider.NodePackage, c.version)
	}
	c.pluginJSON(name+": package.json pulumi", mustJSON(pkg.Pulumi))
	if _, ok := files["package/index.js"]; !ok {
		c.fail("%s has no compiled index.js", name)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v) // plain structs always marshal
	return b
}

var metadataVersion = regexp.MustCompile(`(?m)^Version: (\S+)$`)

func (c *checker) python() {
	wheel := wheelName(c.version)
	files, err := readZip(filepath.Join(c.dist, wheel))
	if err != nil {
		c.fail("Python wheel: %v", err)
	} else {
		meta := files[provider.PythonPackage+"-"+c.version+".dist-info/METADATA"]
		if m := metadataVersion.FindSubmatch(meta); m == nil || string(m[1]) != c.version {
			c.fail("%s: METADATA does not say Version: %s", wheel, c.version)
		}
		c.pluginJSON(wheel+": pulumi-plugin.json", files[provider.PythonPackage+"/pulumi-plugin.json"])
		if _, ok := files[provider.PythonPackage+"/py.typed"]; !ok {
			c.fail("%s has no py.typed: type checkers would ignore its hints", wheel)
		}
	}
	sdist := sdistName(c.version)
	entries, err := readTarGz(filepath.Join(c.dist, sdist))
	if err != nil {
		c.fail("Python sdist: %v", err)
		return
	}
	info := entries[provider.PythonPackage+"-"+c.version+"/PKG-INFO"].data
	if m := metadataVersion.FindSubmatch(info); m == nil || string(m[1]) != c.version {
		c.fail("%s: PKG-INFO does not say Version: %s", sdist, c.version)
	}
}

func (c *checker) java() {
	paths := mavenFiles(c.version)
	jar, sources, javadoc, pom := paths[0], paths[1], paths[2], paths[3]
	pkgDir := strings.ReplaceAll(provider.JavaBasePackage, ".", "/") + "/" + pluginName
	if files, err := readZip(filepath.Join(c.dist, jar)); err != nil {
		c.fail("Java jar: %v", err)
	} else {
		if v := strings.TrimSpace(string(files[pkgDir+"/version.txt"])); v != c.version {
			c.fail("%s: version.txt is %q", jar, v)
		}
		c.pluginJSON(jar+": plugin.json", files[pkgDir+"/plugin.json"])
	}
	if files, err := readZip(filepath.Join(c.dist, sources)); err != nil {
		c.fail("Java sources jar: %v", err)
	} else if _, ok := files[pkgDir+"/Provider.java"]; !ok {
		c.fail("%s has no %s/Provider.java", sources, pkgDir)
	}
	if files, err := readZip(filepath.Join(c.dist, javadoc)); err != nil {
		c.fail("Java javadoc jar: %v", err)
	} else if _, ok := files["index.html"]; !ok {
		c.fail("%s has no index.html", javadoc)
	}
	b, err := os.ReadFile(filepath.Join(c.dist, pom))
	var p struct {
		Group    string `xml:"groupId"`
		Artifact string `xml:"artifactId"`
		Version  string `xml:"version"`
	}
	if err == nil {
		err = xml.Unmarshal(b, &p)
	}
	if err != nil || p.Version != c.version || p.Artifact != pluginName || p.Group != provider.JavaBasePackage {
		c.fail("%s is %s:%s:%s (%v), want %s:%s:%s", pom, p.Group, p.Artifact, p.Version, err, provider.JavaBasePackage, pluginName, c.version)
	}
	for _, f := range paths {
		for _, ext := range []string{".md5", ".sha1"} {
			if _, err := os.Stat(filepath.Join(c.dist, f+ext)); err != nil {
				c.fail("%s%s is missing (Maven Central wants it beside each file)", f, ext)
			}
		}
	}
}

func (c *checker) checksums() {
	sums, err := readChecksums(filepath.Join(c.dist, checksumsName(c.version)))
	if err != nil {
		c.fail("checksums: %v", err)
		return
	}
	files, err := artifacts(c.dist, c.version)
	if err != nil {
		c.fail("%v", err)
		return
	}
	for _, f := range files {
		sum, err := sha256File(filepath.Join(c.dist, f))
		switch {
		case err != nil:
			c.fail("%v", err)
		case sums[f] == "":
			c.fail("%s is not in %s", f, checksumsName(c.version))
		case sums[f] != sum:
			c.fail("%s: sha256 %s, but %s says %s", f, sum, checksumsName(c.version), sums[f])
		}
		delete(sums, f)
	}
	for f := range sums {
		c.fail("%s lists %s, which is not in %s", checksumsName(c.version), f, c.dist)
	}
}

func (c *checker) changelog() {
	b, err := os.ReadFile(filepath.Join(c.root, "CHANGELOG.md"))
	if err != nil {
		c.fail("%v", err)
		return
	}
	heading := regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(c.version) + `\] - \d{4}-\d{2}-\d{2}$`)
	if !heading.Match(b) {
		c.fail("CHANGELOG.md has no section '## [%s] - YYYY-MM-DD': move the Unreleased entries there", c.version)
	}
}
