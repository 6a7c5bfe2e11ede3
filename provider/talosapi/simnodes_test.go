package talosapi_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// The lifecycle tests run the package against the lab's simulated Talos
// nodes (tests/lab/talos), which behave like Talos 1.12 for these calls.

var (
	bundleOnce sync.Once
	bundle     *secrets.Bundle
	bundleErr  error
)

func simBundle(t *testing.T) *secrets.Bundle {
	t.Helper()

	bundleOnce.Do(func() { bundle, bundleErr = talosconfig.NewSecrets(simtest.Version, time.Now()) })

	if bundleErr != nil {
		t.Fatal(bundleErr)
	}

	return bundle
}

// nodeConfig generates a configuration with the project's generator.
func nodeConfig(t *testing.T, role talosconfig.Role, endpoint netip.Addr, disk, version string, patches ...string) []byte {
	t.Helper()

	res, err := talosconfig.Generate(talosconfig.Input{
		ClusterName: "lab", Endpoint: "https://" + endpoint.String() + ":6443", Role: role,
		Secrets: simBundle(t), TalosVersion: simtest.Version, InstallDisk: disk, InstallImage: simtest.Installer(version),
		Patches: patches,
	})
	if err != nil {
		t.Fatal(err)
	}

	return []byte(res.Config)
}

func adminCreds(t *testing.T) *talosapi.Credentials {
	t.Helper()

	b := simBundle(t)

	cert, err := talosconfig.NewAdminCertificate(b, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	return &talosapi.Credentials{CA: b.Certs.OS.Crt, Cert: cert.CertPEM, Key: cert.KeyPEM}
}

func simOptions(t *testing.T) talosapi.Options {
	return talosapi.Options{
		PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond, AttemptTimeout: 5 * time.Second,
		RebootGrace: 2 * time.Second,
		Progress:    func(msg string) { t.Log(msg) },
	}
}

// healthyControlPlane boots one control plane in a lab of its own, applies
// its configuration, bootstraps it and waits until it is healthy: the
// Kubernetes API the manifest tests work against.
func healthyControlPlane(ctx context.Context, t *testing.T) (talosapi.Target, talosapi.Options, *talosapi.Kubeconfig) {
	t.Helper()
	s := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp := ip(2).String()
	simtest.Boot(s, "cp1", ip(2), "scsi0")

	o := simOptions(t)
	target := talosapi.Target{Node: cp, Creds: adminCreds(t)}
	if _, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleControlPlane, ip(2), "/dev/sda", simtest.Version)}, o); err != nil {
		t.Fatal(err)
	}
	if _, err := talosapi.Bootstrap(ctx, target, o); err != nil {
		t.Fatal(err)
	}
	kc, err := talosapi.FetchKubeconfig(ctx, target, "", o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: []string{cp}, Creds: target.Creds, Kubeconfig: kc.Raw}, o); err != nil {
		t.Fatal(err)
	}
	return target, o, kc
}
