package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
)

// The engine itself decides which asset it downloads for a platform: ask Pulumi's plugin
// source for the schema's pluginDownloadURL, answering its GitHub API request with a release
// that holds our six archives, and check it picks ours for each os/arch and tag v<version>.
func TestEngineDownloadsOurArchiveNames(t *testing.T) {
	t.Parallel()
	if os.Getenv("PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES") != "" {
		t.Fatal("PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES is set: this test checks the real GitHub source")
	}
	const version = "1.2.3"
	var assets []map[string]string
	for _, p := range platforms {
		assets = append(assets, map[string]string{"name": archiveName(version, p), "url": "https://asset.test/" + p.String()})
	}
	release, err := json.Marshal(map[string]any{"assets": assets})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		desc := workspace.PluginDescriptor{Name: provider.Name, Kind: apitype.ResourcePlugin, PluginDownloadURL: provider.PluginDownloadURL}
		source, err := desc.GetSource()
		if err != nil {
			t.Fatal(err)
		}
		var asked []string
		get := func(req *http.Request) (io.ReadCloser, int64, error) {
			asked = append(asked, req.URL.String())
			if len(asked) == 1 {
				return io.NopCloser(bytes.NewReader(release)), int64(len(release)), nil
			}
			return io.NopCloser(strings.NewReader("archive")), 7, nil
		}
		if _, _, err := source.Download(context.Background(), semver.MustParse(version), p.OS, p.Arch, get); err != nil {
			t.Fatalf("%s: the engine finds no asset of ours: %v", p, err)
		}
		want := []string{"https://api.github.com/repos/proxmoxtalos/proxmoxtalos/releases/tags/v" + version, "https://asset.test/" + p.String()}
		if strings.Join(asked, " ") != strings.Join(want, " ") {
			t.Errorf("%s: the engine asked for %v, want %v", p, asked, want)
		}
	}
}

func TestArchivesAreReproducible(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "bin")
	if err := os.WriteFile(src, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []archiveFile{{name: "pulumi-resource-proxmoxtalos", path: src, mode: 0o755}}
	a, b := filepath.Join(dir, "a.tar.gz"), filepath.Join(dir, "b.tar.gz")
	for _, f := range []string{a, b} {
		if err := writeArchive(f, files); err != nil {
			t.Fatal(err)
		}
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Error("two archives of the same files differ")
	}
	got, err := readTarGz(a)
	if err != nil {
		t.Fatal(err)
	}
	if e := got["pulumi-resource-proxmoxtalos"]; string(e.data) != "#!/bin/sh\n" || e.mode != 0o755 {
		t.Errorf("archive entry = %q mode %o", e.data, e.mode)
	}
}

// The check catches a tampered artifact, one missing from the checksums, a stale archive of
// another version, and a binary built without the version.
func TestCheckFindsDisagreements(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const version = "1.2.3"
	self, err := os.Executable() // a Go binary built without -X .../version.Version
	if err != nil {
		t.Fatal(err)
	}
	host := hostPlatform()
	if err := writeArchive(filepath.Join(dir, archiveName(version, host)), []archiveFile{{name: binaryName(host), path: self, mode: 0o755}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, archiveName("1.2.2", host)), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeChecksums(dir, version); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "late.whl"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, archiveName("1.2.2", host)), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &checker{root: dir, dist: dir, version: version}
	c.plugins([]Platform{host})
	c.checksums()
	got := strings.Join(c.problems, "\n")
	for _, want := range []string{
		archiveName("1.2.2", host) + ": a plugin archive of another version",
		"the binary's version is not 1.2.3",
		"holds [" + binaryName(host) + "], want",
		"late.whl is not in",
		archiveName("1.2.2", host) + ": sha256",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check did not report %q; it reported:\n%s", want, got)
		}
	}
}

func TestVersionPattern(t *testing.T) {
	t.Parallel()
	for v, ok := range map[string]bool{"0.1.0": true, "10.20.30": true, "0.1": false, "v0.1.0": false, "0.1.0-rc.1": false, "01.1.0": false} {
		if versionPattern.MatchString(v) != ok {
			t.Errorf("versionPattern(%q) = %v", v, !ok)
		}
	}
}
