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
		{in: "v1.13.0", wantErr: "upgrade the provider"},
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
	for in, want := range map[string]string{"v1.11.3": "v1.11", "1.12.5": "v1.12", "v1.8.4": "v1.8"} {
		c, err := VersionContract(in)
		if err != nil || c.String() != want {
			t.Errorf("VersionContract(%s) = %v, %v; want %s", in, c, err, want)
		}
	}
	if _, err := VersionContract("v1.13.1"); err == nil {
		t.Errorf("VersionContract(v1.13.1) accepted a version machinery cannot describe")
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
	if k, _ := DefaultKubernetesVersion("v1.12.5"); k != constants.DefaultKubernetesVersion {
		t.Errorf("Talos 1.12 default = %s, want machinery's %s", k, constants.DefaultKubernetesVersion)
	}
}

func TestCheckUpgrade(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		from, to    string
		wantWarning string
		wantErr     string
	}{
		{from: "v1.11.5", to: "v1.12.5"},
		{from: "v1.12.1", to: "v1.12.5"},
		{from: "v1.12.5", to: "v1.12.5"},
		{from: "v1.12.5", to: "v1.11.5"}, // machinery allows a downgrade by one minor
		{from: "v1.10.9", to: "v1.12.5", wantWarning: "v1.11 (latest patch)"},
		{from: "v1.9.6", to: "v1.12.5", wantErr: "too old to upgrade"},
		{from: "v1.12.5", to: "v1.13.0", wantErr: "not supported"},
		{from: "nope", to: "v1.12.5", wantErr: "current talos version"},
	} {
		warning, err := CheckUpgrade(tc.from, tc.to)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("CheckUpgrade(%s, %s) error = %v, want containing %q", tc.from, tc.to, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("CheckUpgrade(%s, %s) = %v", tc.from, tc.to, err)
		}
		if (tc.wantWarning == "") != (warning == "") || !strings.Contains(warning, tc.wantWarning) {
			t.Errorf("CheckUpgrade(%s, %s) warning = %q, want containing %q", tc.from, tc.to, warning, tc.wantWarning)
		}
	}
}

func TestParseReleaseRefusesReleaseLines(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1.12":           `"1.12" names a release line, not a release: write the full version, like v1.12.5`,
		"v1.35":          `like v1.35.2`,
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
