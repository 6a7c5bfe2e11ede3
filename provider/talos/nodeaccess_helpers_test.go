package talos

import (
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

var (
	applyTestNow    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	applyBundleOnce sync.Once
	applyBundle     *secrets.Bundle
	applyBundleErr  error
)

// testConfig generates a real configuration with the project's generator.
func testConfig(t *testing.T, version string, patches ...string) string {
	t.Helper()

	applyBundleOnce.Do(func() { applyBundle, applyBundleErr = talosconfig.NewSecrets("v1.12.5", applyTestNow) })

	if applyBundleErr != nil {
		t.Fatal(applyBundleErr)
	}

	res, err := talosconfig.Generate(talosconfig.Input{
		ClusterName:  "lab",
		Endpoint:     "https://10.5.0.10:6443",
		Role:         talosconfig.RoleControlPlane,
		Secrets:      applyBundle,
		TalosVersion: "v1.12.5",
		InstallDisk:  "/dev/sda",
		InstallImage: "factory.talos.dev/nocloud-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:" + version,
		Patches:      patches,
	})
	if err != nil {
		t.Fatal(err)
	}

	return res.Config
}
