package talosconfig

import (
	"strconv"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/constants"
)

func TestCheckTalosVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "v1.12.5", want: "1.12.5"},
		{in: "1.12.5", want: "1.12.5"},
		{in: "1.12", want: "1.12.0"},
		{in: "v1.8.0", want: "1.8.0"},
		{in: "v1.12.0-beta.1", want: "1.12.0-beta.1"},
		{in: "v1.7.7", wantErr: "not supported"},
		{in: "v1.13.0", want: "1.13.0"},
		{in: "v1.14.1", want: "1.14.1"},
		{in: "v1.15.0", wantErr: "upgrade the provider"},
		{in: "v2.0.0", wantErr: "not supported"},
		{in: "latest", wantErr: "not a semantic version"},
		{in: "", wantErr: "empty"},
	} {
		v, err := CheckTalosVersion(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("CheckTalosVersion(%q) error = %v, want containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || v.String() != tc.want {
			t.Errorf("CheckTalosVersion(%q) = %v, %v; want %s", tc.in, v, err, tc.want)
		}
	}
}

func TestVersionContractFollowsNode(t *testing.T) {
	t.Parallel()
	// 1.14 nodes get the 1.13 contract (maxContractMinor): never newer than the node.
	for in, want := range map[string]string{"v1.11.3": "v1.11", "1.12.5": "v1.12", "v1.8.4": "v1.8", "v1.13.8": "v1.13", "v1.14.1": "v1.13"} {
		c, err := VersionContract(in)
		if err != nil || c.String() != want {
			t.Errorf("VersionContract(%s) = %v, %v; want %s", in, c, err, want)
		}
	}
	if _, err := VersionContract("v1.15.0"); err == nil {
		t.Errorf("VersionContract(v1.15.0) accepted a version machinery cannot describe")
	}
}

func TestCheckKubernetesVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		talos, k8s, wantErr string
	}{
		{"v1.12.5", "1.35.2", ""},
		{"v1.12.5", "v1.30.0", ""},
		{"v1.12.5", "1.29.9", "too old"},
		{"v1.12.5", "1.36.0", "too new"},
		{"v1.13.8", "1.36.2", ""},
		{"v1.13.8", "1.31.0", ""},
		{"v1.13.8", "1.30.9", "too old"},
		{"v1.13.8", "1.37.0", "too new"},
		{"v1.14.1", "1.37.0", ""},
		{"v1.14.1", "1.32.0", ""},
		{"v1.14.1", "1.31.4", "too old"},
		{"v1.14.1", "1.38.0", "too new"},
		{"v1.11.2", "1.35.0", "too new"},
		{"v1.11.2", "1.34.1", ""},
		{"v1.10.0", "1.33.1", ""},
		{"v1.12.5", "one.two", "not a semantic version"},
		{"v1.5.0", "1.28.0", "not supported"},
	} {
		err := CheckKubernetesVersion(tc.talos, tc.k8s)
		if tc.wantErr == "" && err != nil {
			t.Errorf("CheckKubernetesVersion(%s, %s) = %v, want nil", tc.talos, tc.k8s, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("CheckKubernetesVersion(%s, %s) = %v, want containing %q", tc.talos, tc.k8s, err, tc.wantErr)
		}
	}
}

// Every default must be one its own Talos line supports.
func TestDefaultKubernetesVersionsAreSupported(t *testing.T) {
	t.Parallel()
	for minor := minTalosMinor; minor <= maxTalosMinor; minor++ {
		talos := "v1." + strconv.Itoa(minor) + ".0"
		k8s, err := DefaultKubernetesVersion(talos)
		if err != nil {
			t.Fatalf("DefaultKubernetesVersion(%s): %v", talos, err)
		}
		if err := CheckKubernetesVersion(talos, k8s); err != nil {
			t.Errorf("default Kubernetes %s for Talos %s is not supported: %v", k8s, talos, err)
		}
	}
	// 1.13 is the pinned machinery's line: its own constant; 1.14 the
	// constant of v1.14.1 (talosrelease checks its row against the tag).
	if k, _ := DefaultKubernetesVersion("v1.13.9"); k != constants.DefaultKubernetesVersion {
		t.Errorf("Talos 1.13 default = %s, want machinery's %s", k, constants.DefaultKubernetesVersion)
	}
	if k, _ := DefaultKubernetesVersion(DefaultTalosVersion); k != "1.37.0" {
		t.Errorf("Talos %s default = %s, want 1.37.0 (constants.go at v1.14.1)", DefaultTalosVersion, k)
	}
	if DefaultTalosVersion != "v1.14.1" || DefaultTalosVersion != newestPatch[maxTalosMinor] {
		t.Errorf("default Talos %s is not the newest %d.x patch (%s)", DefaultTalosVersion, maxTalosMinor, newestPatch[maxTalosMinor])
	}
}

// Upgrades go one minor at a time; a refused or skipping path names the
// version to take first.
func TestCheckUpgrade(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		from, to string
		wantErr  []string
	}{
		{from: "v1.11.5", to: "v1.12.5"},
		{from: "v1.12.1", to: "v1.12.5"},
		{from: "v1.12.5", to: "v1.12.5"},
		{from: "v1.12.7", to: "v1.13.8"},
		{from: "v1.13.8", to: "v1.14.1"},
		{from: "v1.12.5", to: "v1.12.1"}, // another patch of the same minor, older or not
		// One minor back: the installer would take it, the provider does not
		// (checkDowngrade), and names what to keep.
		{from: "v1.12.5", to: "v1.11.5", wantErr: []string{"downgrade to an older minor release", "adjacent minor releases, not downgrades", "keep talosVersion on Talos 1.12: v1.12.7"}},
		{from: "v1.14.1", to: "v1.13.8", wantErr: []string{"Talos v1.14.1 to v1.13.8 is a downgrade", "keep talosVersion on Talos 1.14: v1.14.1 (its newest known patch)", "talosctl rollback"}},
		{from: "v1.10.9", to: "v1.12.5", wantErr: []string{"skips a minor release", "set talosVersion to v1.11.6 first, then to v1.12.5"}},
		// Talos 1.14 accepts a 1.12 host (talos114.MinimumHostUpgradeVersion) but advises against it.
		{from: "v1.12.7", to: "v1.14.1", wantErr: []string{"skips a minor release", "set talosVersion to v1.13.9 first"}},
		{from: "v1.11.6", to: "v1.14.1", wantErr: []string{"too old to upgrade", "set talosVersion to v1.12.7 first"}},
		{from: "v1.9.6", to: "v1.12.5", wantErr: []string{"too old to upgrade", "v1.10.9 first"}},
		{from: "v1.14.1", to: "v1.12.7", wantErr: []string{"the node refuses it: host version 1.14.1 is too new to downgrade to Talos 1.12.7", "keep talosVersion on Talos 1.14"}},
		{from: "v1.12.5", to: "v1.15.0", wantErr: []string{"not supported", "the newest is " + DefaultTalosVersion}},
		{from: "nope", to: "v1.12.5", wantErr: []string{"current talos version"}},
	} {
		err := CheckUpgrade(tc.from, tc.to)
		if len(tc.wantErr) == 0 {
			if err != nil {
				t.Errorf("CheckUpgrade(%s, %s) = %v", tc.from, tc.to, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("CheckUpgrade(%s, %s) accepted, want an error containing %q", tc.from, tc.to, tc.wantErr)
			continue
		}
		for _, want := range tc.wantErr {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("CheckUpgrade(%s, %s) = %v, want containing %q", tc.from, tc.to, err, want)
			}
		}
	}
}

func TestParseReleaseRefusesReleaseLines(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1.12":           `"1.12" names a release line, not a release: write the full version, like v1.12.7`,
		"1.14":           `like v1.14.1`,
		"v1.35":          `like v1.35.4`,
		"v1.37":          `like v1.37.0`,
		"v1.99":          `like v1.99.0`,
		"1":              `"1" names a release line`,
		"v1.12.5":        "",
		"1.35.2":         "",
		"v1.13.0-beta.1": "",
		"latest":         "not a semantic version",
	} {
		_, err := ParseRelease(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("ParseRelease(%q): %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("ParseRelease(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}
