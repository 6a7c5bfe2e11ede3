package talosapi

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// kubeconfigYAML is shaped like client-go's clientcmd.Write output, which
// Talos's pkg/kubeconfig Generate produces.
func kubeconfigYAML(t *testing.T, server string, notAfter time.Time) []byte {
	t.Helper()

	ca := newTestCA(t, "kubernetes")
	crt, key := ca.issue(t, "system:masters", false, nil, notAfter)
	b64 := base64.StdEncoding.EncodeToString

	return fmt.Appendf(nil, `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: %s
  name: demo
contexts:
- context:
    cluster: demo
    namespace: default
    user: admin@demo
  name: admin@demo
current-context: admin@demo
kind: Config
preferences: {}
users:
- name: admin@demo
  user:
    client-certificate-data: %s
    client-key-data: %s
`, b64(ca.certPEM), server, b64(crt), b64(key))
}

// talosStream wraps a kubeconfig the way machined's Kubeconfig API does;
// closeTar=false reproduces Talos 1.12, which never closes the tar writer.
func talosStream(t *testing.T, name string, content []byte, closeTar bool) []byte {
	t.Helper()

	var buf bytes.Buffer

	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)

	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(content)), Mode: 0o600, ModTime: time.Now()}); err != nil {
		t.Fatal(err)
	}

	if _, err := tw.Write(content); err != nil {
		t.Fatal(err)
	}

	if closeTar {
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
	} else if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}

	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}

	return buf.Bytes()
}

func TestExtractKubeconfig(t *testing.T) {
	t.Parallel()

	kc := kubeconfigYAML(t, "https://10.5.0.2:6443", time.Now().Add(365*24*time.Hour))

	for _, closeTar := range []bool{false, true} {
		got, err := extractKubeconfig(bytes.NewReader(talosStream(t, "kubeconfig", kc, closeTar)))
		if err != nil || !bytes.Equal(got, kc) {
			t.Fatalf("closeTar=%v: got %d bytes, err %v", closeTar, len(got), err)
		}
	}

	if _, err := extractKubeconfig(bytes.NewReader(talosStream(t, "other", kc, true))); err == nil || !strings.Contains(err.Error(), "no file named kubeconfig") {
		t.Fatalf("stream without kubeconfig: %v", err)
	}

	if _, err := extractKubeconfig(bytes.NewReader(kc)); err == nil || !strings.Contains(err.Error(), "not gzip") {
		t.Fatalf("plain YAML instead of tar.gz: %v", err)
	}
}

func TestRewriteServerAndParse(t *testing.T) {
	t.Parallel()

	notAfter := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second).UTC()
	kc := kubeconfigYAML(t, "https://cluster.local:6443", notAfter)

	out, err := RewriteServer(kc, "https://10.5.0.10:6443")
	if err != nil {
		t.Fatal(err)
	}

	info, err := ParseKubeconfig(out)
	if err != nil {
		t.Fatal(err)
	}

	if info.Server != "https://10.5.0.10:6443" || info.ClusterName != "demo" || info.ContextName != "admin@demo" {
		t.Fatalf("info = %+v", info)
	}

	if !info.NotAfter.Equal(notAfter) {
		t.Fatalf("NotAfter = %s, want %s", info.NotAfter, notAfter)
	}

	if !bytes.Contains(info.ClientKey, []byte("PRIVATE KEY")) || !bytes.Contains(info.CA, []byte("CERTIFICATE")) {
		t.Fatal("client key or CA not decoded")
	}

	// Everything but the server survives the rewrite.
	var before, after map[string]any
	if err := yaml.Unmarshal(kc, &before); err != nil {
		t.Fatal(err)
	}

	if err := yaml.Unmarshal(bytes.ReplaceAll(out, []byte("https://10.5.0.10:6443"), []byte("https://cluster.local:6443")), &after); err != nil {
		t.Fatal(err)
	}

	if !reflect.DeepEqual(before, after) {
		t.Fatalf("rewrite changed more than the server:\n%s", out)
	}
}

func TestParseKubeconfigErrorsDoNotQuoteContent(t *testing.T) {
	t.Parallel()

	bad := []byte("current-context: x\nusers: [{name: a, user: {client-key-data: SECRETKEYMATERIAL}}]\n")

	_, err := ParseKubeconfig(bad)
	if err == nil || strings.Contains(err.Error(), "SECRETKEYMATERIAL") {
		t.Fatalf("err = %v", err)
	}
}

func TestKubernetesEndpoint(t *testing.T) {
	t.Parallel()

	for in, want := range map[string]string{
		"10.5.0.10":               "https://10.5.0.10:6443",
		"10.5.0.10:7443":          "https://10.5.0.10:7443",
		"https://k8s.lan":         "https://k8s.lan:6443",
		"https://10.5.0.10:6443/": "https://10.5.0.10:6443",
		"https://[fd00::10]:6443": "https://[fd00::10]:6443",
	} {
		got, err := KubernetesEndpoint(in)
		if err != nil || got != want {
			t.Errorf("KubernetesEndpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}

	for _, bad := range []string{"", "http://10.5.0.10:6443"} {
		if _, err := KubernetesEndpoint(bad); err == nil {
			t.Errorf("KubernetesEndpoint(%q) accepted", bad)
		}
	}
}

func TestFetchKubeconfigFromNode(t *testing.T) {
	t.Parallel()

	osCA := newTestCA(t, "os")
	kc := kubeconfigYAML(t, "https://cluster.local:6443", time.Now().Add(365*24*time.Hour))
	addr, _ := serveSecureMachine(t, osCA, &secureMachine{kubeconfigStream: talosStream(t, "kubeconfig", kc, false)})

	got, err := FetchKubeconfig(context.Background(), Target{Node: addr, Creds: clientCreds(t, osCA, "os:admin")}, "10.5.0.10", fastOptions())
	if err != nil {
		t.Fatal(err)
	}

	if got.Info.Server != "https://10.5.0.10:6443" || !bytes.Contains(got.Raw, []byte("server: https://10.5.0.10:6443")) {
		t.Fatalf("server not rewritten: %s", got.Info.Server)
	}
}
