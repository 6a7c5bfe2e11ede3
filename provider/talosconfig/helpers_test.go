package talosconfig

import (
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
)

// testNow is a fixed clock for every test.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Bundles are expensive (an RSA key each): make one per version per run.
var (
	bundleMu sync.Mutex
	bundles  = map[string]*secrets.Bundle{}
)

func testBundle(t testing.TB, talosVersion string) *secrets.Bundle {
	t.Helper()
	bundleMu.Lock()
	defer bundleMu.Unlock()
	if b, ok := bundles[talosVersion]; ok {
		return b
	}
	b, err := NewSecrets(talosVersion, testNow)
	if err != nil {
		t.Fatalf("NewSecrets(%s): %v", talosVersion, err)
	}
	bundles[talosVersion] = b
	return b
}

// secondBundle is a different bundle for the same version.
func secondBundle(t testing.TB, talosVersion string) *secrets.Bundle {
	return testBundle(t, talosVersion+"+second")
}

func baseInput(t testing.TB, talosVersion string, role Role, patches ...string) Input {
	t.Helper()
	return Input{
		ClusterName:  "lab",
		Endpoint:     "https://192.168.1.220:6443",
		Role:         role,
		Secrets:      testBundle(t, talosVersion),
		TalosVersion: talosVersion,
		InstallDisk:  "/dev/sda",
		InstallImage: "factory.talos.dev/nocloud-installer/ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515:" + talosVersion,
		SANs:         []string{"192.168.1.220", "k8s.lab.example"},
		Patches:      patches,
	}
}

func mustGenerate(t testing.TB, in Input) string {
	t.Helper()
	res, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return res.Config
}

// bundleSecrets lists every secret value of a bundle, in the forms they take
// in a machine configuration (base64 PEM) and raw.
func bundleSecrets(b *secrets.Bundle) []string {
	vals := []string{
		b.Cluster.Secret, b.Secrets.BootstrapToken, b.Secrets.SecretboxEncryptionSecret,
		b.Secrets.AESCBCEncryptionSecret, b.TrustdInfo.Token,
	}
	for _, k := range [][]byte{b.Certs.Etcd.Key, b.Certs.K8s.Key, b.Certs.K8sAggregator.Key, b.Certs.K8sServiceAccount.Key, b.Certs.OS.Key} {
		vals = append(vals, string(k), b64(k))
	}
	var out []string
	for _, v := range vals {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func assertNoSecrets(t *testing.T, what, text string, secretValues []string) {
	t.Helper()
	for _, s := range secretValues {
		// the bootstrap token id half is not secret on its own; check the whole value
		if strings.Contains(text, s) {
			t.Fatalf("%s contains a secret value (%d chars)", what, len(s))
		}
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
