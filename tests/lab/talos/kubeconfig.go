package talos

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	stdx509 "crypto/x509"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/siderolabs/crypto/x509"
	"gopkg.in/yaml.v3"

	"github.com/siderolabs/talos/pkg/machinery/config/config"
)

// adminKubeconfig generates the admin kubeconfig as Talos's
// pkg/kubeconfig.GenerateAdmin does: a client certificate from the cluster CA
// (CN/O and lifetime from cluster.adminKubeconfig, defaults admin,
// system:masters, one year), the cluster endpoint, and the issuing plus
// accepted CAs as the server CA bundle; names "<cluster>", "admin@<cluster>".
func adminKubeconfig(cl config.ClusterConfig) ([]byte, error) {
	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(cl.IssuingCA())
	if err != nil {
		return nil, fmt.Errorf("error getting Kubernetes CA: %w", err)
	}

	admin := cl.AdminKubeconfig()

	kp, err := x509.NewKeyPair(ca,
		x509.CommonName(admin.CommonName()),
		x509.Organization(admin.CertOrganization()),
		x509.NotBefore(time.Now().Add(-10*time.Second)),
		x509.NotAfter(time.Now().Add(admin.CertLifetime())),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature|stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}),
	)
	if err != nil {
		return nil, fmt.Errorf("error generating Kubernetes client certificate: %w", err)
	}

	pem := x509.NewCertificateAndKeyFromKeyPair(kp)

	var caBundle []byte
	for _, a := range cl.AcceptedCAs() {
		caBundle = append(caBundle, a.Crt...)
	}

	caBundle = append(caBundle, cl.IssuingCA().Crt...)

	user := "admin@" + cl.Name()

	doc := kubeconfigDoc{
		APIVersion: "v1",
		Kind:       "Config",
		Clusters: []namedCluster{{Name: cl.Name(), Cluster: kubeconfigCluster{
			Server: cl.Endpoint().String(), CertificateAuthorityData: caBundle,
		}}},
		Contexts: []namedContext{{Name: user, Context: kubeconfigContext{
			Cluster: cl.Name(), Namespace: "default", User: user,
		}}},
		CurrentContext: user,
		Preferences:    map[string]any{},
		Users: []namedUser{{Name: user, User: kubeconfigUser{
			ClientCertificateData: pem.Crt, ClientKeyData: pem.Key,
		}}},
	}

	return yaml.Marshal(doc)
}

// kubeconfig v1 as clientcmd writes it (byte slices base64 encoded).
type kubeconfigDoc struct {
	APIVersion     string         `yaml:"apiVersion"`
	Clusters       []namedCluster `yaml:"clusters"`
	Contexts       []namedContext `yaml:"contexts"`
	CurrentContext string         `yaml:"current-context"`
	Kind           string         `yaml:"kind"`
	Preferences    map[string]any `yaml:"preferences"`
	Users          []namedUser    `yaml:"users"`
}

type namedCluster struct {
	Name    string            `yaml:"name"`
	Cluster kubeconfigCluster `yaml:"cluster"`
}

type kubeconfigCluster struct {
	CertificateAuthorityData b64    `yaml:"certificate-authority-data"`
	Server                   string `yaml:"server"`
}

type namedContext struct {
	Name    string            `yaml:"name"`
	Context kubeconfigContext `yaml:"context"`
}

type kubeconfigContext struct {
	Cluster   string `yaml:"cluster"`
	Namespace string `yaml:"namespace"`
	User      string `yaml:"user"`
}

type namedUser struct {
	Name string         `yaml:"name"`
	User kubeconfigUser `yaml:"user"`
}

type kubeconfigUser struct {
	ClientCertificateData b64 `yaml:"client-certificate-data"`
	ClientKeyData         b64 `yaml:"client-key-data"`
}

// b64 marshals bytes as base64, like Go's JSON encoding of []byte that
// clientcmd uses.
type b64 []byte

func (b b64) MarshalYAML() (any, error) {
	return base64.StdEncoding.EncodeToString(b), nil
}

// kubeconfigArchive wraps a kubeconfig into the tar.gz stream the
// Kubeconfig API sends: one regular file named "kubeconfig", mode 0600
// (internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go).
func kubeconfigArchive(kubeconfig []byte) ([]byte, error) {
	var buf bytes.Buffer

	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)

	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     "kubeconfig",
		Size:     int64(len(kubeconfig)),
		ModTime:  time.Now(),
		Mode:     0o600,
	}); err != nil {
		return nil, err
	}

	if _, err := tw.Write(kubeconfig); err != nil {
		return nil, err
	}

	// Talos closes only the gzip writer (the tar stream has no end-of-archive
	// marker); readers stop at EOF all the same.
	if err := zw.Close(); err != nil {
		return nil, err
	}

	return buf.Bytes(), nil
}
