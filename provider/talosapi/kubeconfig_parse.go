package talosapi

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// maxKubeconfigSize bounds what is read from a node's stream.
const maxKubeconfigSize = 4 << 20

// extractKubeconfig reads the file named "kubeconfig" from the gzipped tar
// stream the Kubeconfig API sends (machined v1alpha1_server.go Kubeconfig;
// it closes the gzip writer but not the tar writer, so the archive ends
// without the two zero blocks and that must be accepted).
func extractKubeconfig(r io.Reader) ([]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig stream is not gzip: %w", err)
	}
	defer zr.Close() //nolint:errcheck

	tr := tar.NewReader(zr)

	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("kubeconfig stream has no file named kubeconfig")
		}

		if err != nil {
			return nil, fmt.Errorf("kubeconfig stream is not a tar archive: %w", err)
		}

		if strings.TrimPrefix(h.Name, "./") != "kubeconfig" || h.Typeflag != tar.TypeReg {
			continue
		}

		b, err := io.ReadAll(io.LimitReader(tr, maxKubeconfigSize+1))
		if err != nil {
			return nil, fmt.Errorf("reading kubeconfig from the stream: %w", err)
		}

		if len(b) > maxKubeconfigSize {
			return nil, fmt.Errorf("kubeconfig in the stream is larger than %d bytes", maxKubeconfigSize)
		}

		return b, nil
	}
}

// KubernetesEndpoint normalises a cluster endpoint to the URL form a
// kubeconfig uses: "10.5.0.10" and "10.5.0.10:6443" become
// "https://10.5.0.10:6443".
func KubernetesEndpoint(endpoint string) (string, error) {
	e := strings.TrimSpace(endpoint)
	if e == "" {
		return "", errors.New("Kubernetes endpoint is empty")
	}

	if !strings.Contains(e, "://") {
		e = "https://" + e
	}

	u, err := url.Parse(e)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("Kubernetes endpoint %q is not a URL like https://10.5.0.10:6443", endpoint)
	}

	if u.Scheme != "https" {
		return "", fmt.Errorf("Kubernetes endpoint %q must use https", endpoint)
	}

	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "6443")
	}

	u.Path = strings.TrimSuffix(u.Path, "/")

	return u.String(), nil
}

// RewriteServer points every cluster of a kubeconfig at server, keeping
// everything else as it is.
func RewriteServer(kubeconfig []byte, server string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(kubeconfig, &doc); err != nil || len(doc.Content) == 0 {
		return nil, errors.New("kubeconfig is not a YAML document")
	}

	clusters := mapValue(doc.Content[0], "clusters")
	if clusters == nil || clusters.Kind != yaml.SequenceNode || len(clusters.Content) == 0 {
		return nil, errors.New("kubeconfig has no clusters")
	}

	for _, item := range clusters.Content {
		c := mapValue(item, "cluster")
		if c == nil {
			return nil, errors.New("kubeconfig has a cluster entry without a cluster")
		}

		s := mapValue(c, "server")
		if s == nil {
			c.Content = append(c.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "server"}, &yaml.Node{Kind: yaml.ScalarNode, Value: server})

			continue
		}

		s.Value, s.Tag, s.Style = server, "!!str", 0
	}

	var buf bytes.Buffer

	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)

	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}

	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}

	return buf.Bytes(), nil
}

// mapValue returns the value node of key in a mapping node, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}

	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}

	return nil
}

// KubeconfigInfo is what a kubeconfig's current context holds.
type KubeconfigInfo struct {
	Server      string
	ClusterName string
	ContextName string
	// CA is the PEM bundle that verifies the API server.
	CA []byte
	// ClientCert and ClientKey are PEM; secrets.
	ClientCert []byte
	ClientKey  []byte
	// NotAfter is when the client certificate expires.
	NotAfter time.Time
}

type kubeconfigFile struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server string `yaml:"server"`
			CAData string `yaml:"certificate-authority-data"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster  string `yaml:"cluster"`
			AuthInfo string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			CertData string `yaml:"client-certificate-data"`
			KeyData  string `yaml:"client-key-data"`
		} `yaml:"user"`
	} `yaml:"users"`
}

// ParseKubeconfig reads the current context of a kubeconfig with embedded
// certificate data (the form Talos generates). Errors never quote the file.
func ParseKubeconfig(kubeconfig []byte) (*KubeconfigInfo, error) {
	var f kubeconfigFile
	if err := yaml.Unmarshal(kubeconfig, &f); err != nil {
		return nil, errors.New("kubeconfig is not a YAML kubeconfig document")
	}

	info := &KubeconfigInfo{ContextName: f.CurrentContext}

	var clusterName, userName string

	for _, c := range f.Contexts {
		if c.Name == f.CurrentContext {
			clusterName, userName = c.Context.Cluster, c.Context.AuthInfo
		}
	}

	if clusterName == "" {
		return nil, fmt.Errorf("kubeconfig has no context named %q (its current-context)", f.CurrentContext)
	}

	info.ClusterName = clusterName

	var err error

	for _, c := range f.Clusters {
		if c.Name == clusterName {
			info.Server = c.Cluster.Server
			if info.CA, err = base64.StdEncoding.DecodeString(c.Cluster.CAData); err != nil {
				return nil, fmt.Errorf("kubeconfig cluster %q: certificate-authority-data is not base64", clusterName)
			}
		}
	}

	for _, u := range f.Users {
		if u.Name != userName {
			continue
		}

		if info.ClientCert, err = base64.StdEncoding.DecodeString(u.User.CertData); err != nil {
			return nil, fmt.Errorf("kubeconfig user %q: client-certificate-data is not base64", userName)
		}

		if info.ClientKey, err = base64.StdEncoding.DecodeString(u.User.KeyData); err != nil {
			return nil, fmt.Errorf("kubeconfig user %q: client-key-data is not base64", userName)
		}
	}

	if info.Server == "" {
		return nil, fmt.Errorf("kubeconfig has no server for cluster %q", clusterName)
	}

	block, _ := pem.Decode(info.ClientCert)
	if block == nil {
		return nil, fmt.Errorf("kubeconfig user %q has no PEM client certificate", userName)
	}

	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig user %q: client certificate does not parse: %w", userName, err)
	}

	info.NotAfter = cert.NotAfter.UTC()

	return info, nil
}
