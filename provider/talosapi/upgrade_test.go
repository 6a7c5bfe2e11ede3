package talosapi

import (
	"errors"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestImageVersion(t *testing.T) {
	t.Parallel()

	for in, want := range map[string]string{
		"factory.talos.dev/nocloud-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.12.5": "v1.12.5",
		"ghcr.io/siderolabs/installer:v1.11.0":                  "v1.11.0",
		"registry.lan:5000/siderolabs/installer:v1.12.0-beta.1": "v1.12.0-beta.1",
		"ghcr.io/siderolabs/installer:v1.12.5@sha256:0123abcd":  "v1.12.5",
		"registry.lan:5000/siderolabs/installer":                "",
		"ghcr.io/siderolabs/installer:latest":                   "",
		"ghcr.io/siderolabs/installer@sha256:0123abcd":          "",
	} {
		got, ok := ImageVersion(in)
		if got != want || ok != (want != "") {
			t.Errorf("ImageVersion(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestSameVersion(t *testing.T) {
	t.Parallel()

	if !sameVersion("v1.12.5", "1.12.5") || sameVersion("v1.12.5", "v1.12.4") || !sameVersion("v1.12.0-beta.1", "1.12.0-beta.1") {
		t.Fatal("sameVersion")
	}
}

func TestUpgradeRetryable(t *testing.T) {
	t.Parallel()

	// Texts from machined's Upgrade (v1alpha1_server.go) and etcd ValidateForUpgrade.
	if !upgradeRetryable(errors.New("failed to acquire upgrade mutex: context deadline exceeded")) {
		t.Error("mutex contention must be retried")
	}

	if !upgradeRetryable(status.Error(codes.Unknown, "error validating etcd for upgrade: etcd member 10.5.0.3 is not healthy")) {
		t.Error("etcd health must be retried")
	}

	if upgradeRetryable(status.Error(codes.Unknown, `error validating installer image "x:v9": failed to pull`)) {
		t.Error("a bad image must not be retried")
	}
}

// TestUpgradeSendsPreserveOnlyToNodesOlderThan18: on Talos 1.8 and later
// preserve keeps nothing more (EPHEMERAL is always kept) but makes machined
// skip its etcd pre-upgrade check (v1.14.1 v1alpha1_server.go:517), so the
// request must carry preserve=false there even when the user set it.
func TestUpgradeSendsPreserveOnlyToNodesOlderThan18(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		running       string
		userPreserve  bool
		wantPreserved bool
	}{
		{"v1.14.1", true, false},
		{"v1.13.9", true, false},
		{"v1.12.5", true, false},
		{"v1.8.0", true, false},
		{"v1.7.6", true, true},
		{"v1.8.0-beta.0", true, true}, // before 1.8.0: keep the user's choice
		{"", true, true},              // unknown: keep the user's choice
		{"v1.7.6", false, false},
		{"v1.14.1", false, false},
	} {
		var got client.UpgradeOptions
		for _, opt := range upgradeOptions(UpgradeRequest{Image: "ghcr.io/siderolabs/installer:v1.14.1", Stage: true, Preserve: tc.userPreserve}, tc.running) {
			opt(&got)
		}

		if got.Request.Preserve != tc.wantPreserved {
			t.Errorf("node on %q, upgrade.preserve %v: request preserve = %v, want %v", tc.running, tc.userPreserve, got.Request.Preserve, tc.wantPreserved)
		}

		if got.Request.Image != "ghcr.io/siderolabs/installer:v1.14.1" || !got.Request.Stage {
			t.Errorf("node on %q: image/stage lost: %+v", tc.running, &got.Request)
		}
	}
}
