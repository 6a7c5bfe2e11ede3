package leakscan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// secretValue is how `pulumi stack export --show-secrets` writes a secret.
func secretValue(t *testing.T, v any) map[string]any {
	t.Helper()

	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}

	return map[string]any{sigKey: secretSig, "plaintext": string(b)}
}

// ciphertext is how `pulumi stack export` writes it.
func ciphertext() map[string]any {
	return map[string]any{sigKey: secretSig, "ciphertext": "v1:Zm9vYmFyYmF6:cXV4cXV4cXV4cXV4"}
}

type fixture struct {
	export, encrypted []byte
	bundleYAML        string
	machineConfig     string
	client            talosconfig.ClientCertificate
	caPEM             string
	token             string
}

func newFixture(t *testing.T) fixture {
	t.Helper()

	now := time.Now()

	bundle, err := talosconfig.NewSecrets("v1.12.5", now)
	if err != nil {
		t.Fatal(err)
	}

	bundleYAML, err := talosconfig.MarshalSecrets(bundle)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := talosconfig.Generate(talosconfig.Input{
		ClusterName: "lab", Endpoint: "https://127.0.0.1:6443", Role: talosconfig.RoleControlPlane,
		Secrets: bundle, TalosVersion: "v1.12.5", InstallDisk: "/dev/sda",
		Patches: []string{"machine: {env: {https_proxy: 'http://admin:proxy-pass-1234@proxy:3128'}}"},
	})
	if err != nil {
		t.Fatal(err)
	}

	client, err := talosconfig.NewAdminCertificate(bundle, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	talosConfig, err := talosconfig.ClientConfiguration("lab", []string{"127.0.0.1"}, nil, bundle.Certs.OS.Crt, client)
	if err != nil {
		t.Fatal(err)
	}

	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n    server: https://127.0.0.1:6443\n"+
		"    certificate-authority-data: %s\nusers:\n- name: admin@lab\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n",
		base64.StdEncoding.EncodeToString(bundle.Certs.K8s.Crt), base64.StdEncoding.EncodeToString(client.CertPEM),
		base64.StdEncoding.EncodeToString(client.KeyPEM))

	token := "root@pam!lab=3f1d9c2e-8b7a-4c1e-9d2f-0a1b2c3d4e5f"

	state := func(secret func(any) map[string]any) []byte {
		doc := map[string]any{"deployment": map[string]any{"resources": []any{
			map[string]any{"type": "pulumi:providers:proxmoxtalos", "inputs": map[string]any{"endpoint": "https://127.0.0.1:8006", "apiToken": secret(token)}},
			map[string]any{"type": "proxmoxtalos:talos:MachineSecrets", "outputs": map[string]any{
				"machineSecrets": secret(bundleYAML),
				"clientConfiguration": secret(map[string]any{
					"caCertificate": string(bundle.Certs.OS.Crt), "clientCertificate": string(client.CertPEM), "clientKey": string(client.KeyPEM),
				}),
			}},
			map[string]any{"type": "proxmoxtalos:talos:ConfigurationApply", "outputs": map[string]any{"machineConfiguration": secret(cfg.Config), "node": "127.0.0.2"}},
			map[string]any{"type": "proxmoxtalos:talos:Kubeconfig", "outputs": map[string]any{"kubeconfig": secret(kubeconfig)}},
			map[string]any{"type": "pulumi:pulumi:Stack", "outputs": map[string]any{"talosconfig": secret(talosConfig)}},
		}}}

		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}

		return b
	}

	return fixture{
		export:     state(func(v any) map[string]any { return secretValue(t, v) }),
		encrypted:  state(func(any) map[string]any { return ciphertext() }),
		bundleYAML: bundleYAML, machineConfig: cfg.Config, client: client,
		caPEM: string(bundle.Certs.OS.Crt), token: token,
	}
}

func TestCollectAndScan(t *testing.T) {
	t.Parallel()

	f := newFixture(t)

	set, err := FromExport(f.export)
	if err != nil {
		t.Fatal(err)
	}

	needles := set.Needles()

	var origins []string
	for _, s := range set.Secrets {
		origins = append(origins, s.Origin)
	}

	all := strings.Join(origins, "\n") + "\n"
	for _, want := range []string{
		"cluster.secret", "trustdinfo.token", "certs.os.key", "certs.k8sserviceaccount.key", "users.user.client-key-data",
		"contexts.lab.key", "clientConfiguration.clientKey", "(token secret)", "machine configuration secret #9",
	} {
		if !strings.Contains(all, want+"\n") {
			t.Errorf("no secret collected with origin ending %q; origins:\n%s", want, all)
		}
	}

	if strings.Contains(all, "caCertificate") {
		t.Errorf("a CA certificate was collected as a secret")
	}

	// The state with its secrets encrypted holds none of them.
	if found := Scan("encrypted state", string(f.encrypted), needles); len(found) > 0 {
		t.Errorf("false positives in encrypted state: %v", found)
	}

	// Public parts of secret objects and non-secret configuration leaves
	// are not needles: a CA certificate may be printed.
	public := f.caPEM + "\ncluster: lab, node 127.0.0.2, endpoint https://127.0.0.1:6443, root@pam!lab\n"
	if found := Scan("public", public, needles); len(found) > 0 {
		t.Errorf("public values reported as leaks: %v", found)
	}

	// Negative control: each of these outputs leaks one secret, in the forms
	// a log line, a --json event or a diff would carry it.
	keyJSON, _ := json.Marshal(map[string]string{"clientKey": string(f.client.KeyPEM)}) //nolint:errcheck // strings
	bundle, _ := talosconfig.UnmarshalSecrets(f.bundleYAML)                             //nolint:errcheck // generated above

	for name, leak := range map[string]string{
		"token in a URL":             "GET https://127.0.0.1:8006/api2/json?token=" + f.token[strings.Index(f.token, "=")+1:],
		"whole token":                "Authorization: PVEAPIToken=" + f.token,
		"key PEM in a log line":      "debug: loaded key\n" + string(f.client.KeyPEM),
		"key PEM in a --json event":  `{"diagnosticEvent":{"message":` + string(keyJSON) + `}}`,
		"key as base64":              "client-key-data: " + base64.StdEncoding.EncodeToString(f.client.KeyPEM),
		"bundle key as in the state": "os key: " + base64.StdEncoding.EncodeToString(bundle.Certs.OS.Key),
		"bootstrap token in a diff":  "+ cluster.token: \"" + bundle.Secrets.BootstrapToken + "\"",
		"proxy password":             "env https_proxy=http://admin:proxy-pass-1234@proxy:3128",
		"aescbc secret":              "secret " + bundle.Secrets.SecretboxEncryptionSecret,
		"client certificate":         string(f.client.CertPEM),
	} {
		found := Scan(name, leak, needles)
		if len(found) == 0 {
			t.Errorf("%s: the leak was not found", name)
			continue
		}

		for _, fd := range found {
			if strings.Contains(fd.String(), f.token) || fd.Length == 0 {
				t.Errorf("%s: finding %q", name, fd)
			}
		}
	}
}

func TestFindingsNameNoSecret(t *testing.T) {
	t.Parallel()

	s := &Set{}
	s.Add("stack.outputs.password", "correct-horse-battery-staple")

	found := Scan("stdout", "line one\nthe password is correct-horse-battery-staple\n", s.Needles())
	if len(found) != 1 || found[0].Line != 2 || strings.Contains(found[0].String(), "horse") {
		t.Fatalf("findings %v", found)
	}

	if found := Scan("stdout", "the password is correct-horse", s.Needles()); len(found) != 0 {
		t.Errorf("a prefix of a secret is not the secret: %v", found)
	}
}
