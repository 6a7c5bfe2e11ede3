package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"gopkg.in/yaml.v3"
)

// kubeNode is what the examples' tests check of a Kubernetes node.
type kubeNode struct {
	Ready      bool
	ProviderID string
}

// kubeNodes lists the cluster's nodes through the Kubernetes API the kubeconfig points at,
// authenticating with its client certificate and verifying the server against its CA, as
// kubectl get nodes does.
func kubeNodes(kubeconfig string) (map[string]kubeNode, error) {
	var kc struct {
		Clusters []struct {
			Cluster struct {
				Server string `yaml:"server"`
				CA     string `yaml:"certificate-authority-data"`
			} `yaml:"cluster"`
		} `yaml:"clusters"`
		Users []struct {
			User struct {
				Cert string `yaml:"client-certificate-data"`
				Key  string `yaml:"client-key-data"`
			} `yaml:"user"`
		} `yaml:"users"`
	}
	if err := yaml.Unmarshal([]byte(kubeconfig), &kc); err != nil {
		return nil, fmt.Errorf("kubeconfig is not YAML: %w", err)
	}
	if len(kc.Clusters) != 1 || len(kc.Users) != 1 {
		return nil, fmt.Errorf("kubeconfig has %d clusters and %d users, want one of each", len(kc.Clusters), len(kc.Users))
	}
	decode := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }
	cert, err := tls.X509KeyPair(decode(kc.Users[0].User.Cert), decode(kc.Users[0].User.Key))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(decode(kc.Clusters[0].Cluster.CA)) {
		return nil, fmt.Errorf("kubeconfig has no CA certificate")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}
	url := kc.Clusters[0].Cluster.Server + "/api/v1/nodes"
	res, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				ProviderID string `json:"providerID"`
			} `json:"spec"`
			Status struct {
				Conditions []struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	out := map[string]kubeNode{}
	for _, it := range list.Items {
		n := kubeNode{ProviderID: it.Spec.ProviderID}
		for _, c := range it.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				n.Ready = true
			}
		}
		out[it.Metadata.Name] = n
	}
	return out, nil
}
