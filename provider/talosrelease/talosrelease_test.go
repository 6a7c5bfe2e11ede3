package talosrelease

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/compatibility"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

// Our rule over the table answers as machinery's own compatibility
// package for every minor machinery knows, on a grid of versions around
// each bound (same error or none, same wording).
func TestRulesAnswerAsMachinery(t *testing.T) {
	t.Parallel()
	var hosts, k8s []semver.Version
	for minor := uint64(0); minor <= 16; minor++ {
		for _, p := range []uint64{0, 1, 5} {
			hosts = append(hosts, semver.Version{Major: 1, Minor: minor, Patch: p})
		}
	}
	for minor := uint64(22); minor <= 39; minor++ {
		for _, p := range []uint64{0, 3, 99} {
			k8s = append(k8s, semver.Version{Major: 1, Minor: minor, Patch: p})
		}
	}
	for minor := uint64(2); minor <= 13; minor++ {
		target := semver.Version{Major: 1, Minor: minor, Patch: 2}
		mt, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: "v" + target.String()})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hosts {
			mh, _ := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: "v" + h.String()})
			if got, want := fmt.Sprint(UpgradeableFrom(target, h)), fmt.Sprint(mt.UpgradeableFrom(mh)); got != want {
				t.Errorf("UpgradeableFrom(%s, %s) = %s; machinery says %s", target, h, got, want)
			}
		}
		for _, k := range k8s {
			mk, _ := compatibility.ParseKubernetesVersion(k.String())
			if got, want := fmt.Sprint(KubernetesSupported(target, k)), fmt.Sprint(mk.SupportedWith(mt)); got != want {
				t.Errorf("KubernetesSupported(%s, %s) = %s; machinery says %s", target, k, got, want)
			}
		}
	}
}

func TestNewerReleaseRules(t *testing.T) {
	t.Parallel()
	v := func(s string) semver.Version { return semver.MustParse(s) }
	for _, c := range []struct {
		target, host string
		want         string
	}{
		{"1.14.1", "1.13.9", "<nil>"},
		{"1.14.1", "1.12.0", "<nil>"},
		{"1.14.1", "1.11.6", "host version 1.11.6 is too old to upgrade to Talos 1.14.1"},
		{"1.14.1", "1.15.3", "<nil>"},
		{"1.14.1", "1.16.0", "host version 1.16.0 is too new to downgrade to Talos 1.14.1"},
		{"1.15.0", "1.14.1", "upgrades to version 1.15.0 are not supported"},
	} {
		if got := fmt.Sprint(UpgradeableFrom(v(c.target), v(c.host))); got != c.want {
			t.Errorf("UpgradeableFrom(%s, %s) = %s; want %s", c.target, c.host, got, c.want)
		}
	}
	for k, want := range map[string]string{
		"1.31.9": "version of Kubernetes 1.31.9 is too old to be used with Talos 1.14.1",
		"1.32.0": "<nil>",
		"1.37.0": "<nil>",
		"1.37.5": "<nil>",
		"1.38.0": "version of Kubernetes 1.38.0 is too new to be used with Talos 1.14.1",
	} {
		if got := fmt.Sprint(KubernetesSupported(v("1.14.1"), v(k))); got != want {
			t.Errorf("KubernetesSupported(1.14.1, %s) = %s; want %s", k, got, want)
		}
	}
	if err := KubernetesImageSupported(v("1.14.1"), "registry.k8s.io/kube-apiserver:v1.37.0"); err != nil {
		t.Errorf("kube-apiserver 1.37.0 on Talos 1.14.1: %v", err)
	}
	if err := KubernetesImageSupported(v("1.13.9"), "ghcr.io/siderolabs/kubelet:v1.37.0@sha256:00"); err == nil {
		t.Error("kubelet 1.37.0 on Talos 1.13.9 accepted")
	}
}

// Each row of newerReleases says what the files it cites say at its tag:
// the test reads them from the Go module of that tag (go mod download,
// through the module proxy or the module cache).
func TestNewerReleasesMatchTheirTag(t *testing.T) {
	if len(newerReleases) == 0 {
		t.Fatal("no newer releases tabled: drop this test with the table")
	}
	for minor, r := range newerReleases {
		dir := machineryAt(t, r.Tag)
		pkg := filepath.Join(dir, "compatibility", fmt.Sprintf("talos1%d", minor), fmt.Sprintf("talos1%d.go", minor))
		src := readFile(t, pkg)
		for name, got := range map[string]semver.Version{
			"MinimumHostUpgradeVersion":   r.MinHostUpgrade,
			"MaximumHostDowngradeVersion": r.MaxHostDowngrade,
			"MinimumKubernetesVersion":    r.MinKubernetes,
			"MaximumKubernetesVersion":    r.MaxKubernetes,
		} {
			m := regexp.MustCompile(`var ` + name + ` = semver\.MustParse\("([^"]+)"\)`).FindStringSubmatch(src)
			if m == nil || m[1] != got.String() {
				t.Errorf("Talos 1.%d %s: table %s, %s says %v", minor, name, got, pkg, m)
			}
		}
		if m := regexp.MustCompile(`var DeniedHostUpgradeVersions (.*)`).FindStringSubmatch(src); m == nil || m[1] != "[]semver.Version" || len(r.DeniedHostUpgrades) != 0 {
			t.Errorf("Talos 1.%d DeniedHostUpgradeVersions: %s says %v, table %v", minor, pkg, m, r.DeniedHostUpgrades)
		}
		if got, want := r.Documents, newDocumentsAt(t, dir); !slices.Equal(got, want) {
			t.Errorf("Talos 1.%d documents: table %v, the kinds %s registers that pinned machinery does not: %v", minor, got, r.Tag, want)
		}
		consts := filepath.Join(dir, "constants", "constants.go")
		if m := regexp.MustCompile(`DefaultKubernetesVersion = "([^"]+)"`).FindStringSubmatch(readFile(t, consts)); m == nil || m[1] != r.DefaultKubernetes {
			t.Errorf("Talos 1.%d DefaultKubernetesVersion: table %s, %s says %v", minor, r.DefaultKubernetes, consts, m)
		}
	}
}

// newDocumentsAt lists, sorted, the document kinds registered under
// config/types of the machinery in dir (registry.Register(<const>, ...),
// the const's string value) that the pinned machinery's decoder refuses as
// "not registered".
func newDocumentsAt(t *testing.T, dir string) []string {
	t.Helper()
	var sources []string
	err := filepath.WalkDir(filepath.Join(dir, "config", "types"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			sources = append(sources, readFile(t, path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(sources, "\n")
	var kinds []string
	for _, m := range regexp.MustCompile(`registry\.Register\(\s*(?:\w+\.)?(\w+)`).FindAllStringSubmatch(all, -1) {
		v := regexp.MustCompile(`\b` + m[1] + `\s*=\s*"(\w+)"`).FindStringSubmatch(all)
		if v == nil {
			t.Fatalf("registry.Register(%s): no string constant %s in %s", m[1], m[1], dir)
		}
		_, err := configloader.NewFromBytes([]byte("apiVersion: v1alpha1\nkind: " + v[1] + "\n"))
		if err != nil && strings.Contains(err.Error(), "not registered") && !slices.Contains(kinds, v[1]) {
			kinds = append(kinds, v[1])
		}
	}
	if len(kinds) == 0 {
		t.Fatalf("no registry.Register calls found under %s/config/types", dir)
	}
	slices.Sort(kinds)
	return kinds
}

// machineryAt is the directory of siderolabs/talos/pkg/machinery at tag.
func machineryAt(t *testing.T, tag string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/siderolabs/talos/pkg/machinery@"+tag)
	cmd.Dir = t.TempDir() // outside any module: no go.mod to update
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download machinery@%s: %v\n%s", tag, err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download machinery@%s: %s %v", tag, mod.Error, err)
	}
	return mod.Dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
