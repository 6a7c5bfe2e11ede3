// Package kube is a minimal Kubernetes API client for the demo and the
// end-to-end tests: it lists nodes with an admin kubeconfig, the way
// `kubectl get nodes -o wide` shows them, plus each node's providerID, and
// gives the lab's tests a kubectl-like client for other requests.
package kube

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"
)

// Node is one Kubernetes node.
type Node struct {
	Name       string
	Ready      bool
	Roles      []string
	Version    string
	InternalIP string
	ProviderID string
	Labels     map[string]string
}

type kubeconfig struct {
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

// Client is an HTTP client that authenticates to the kubeconfig's cluster
// with its client certificate, as kubectl does, and the cluster's server URL.
func Client(kubeconfigYAML []byte) (*http.Client, string, error) {
	var kc kubeconfig
	if err := yaml.Unmarshal(kubeconfigYAML, &kc); err != nil {
		return nil, "", fmt.Errorf("the kubeconfig is not YAML: %w", err)
	}
	// One of each, as Talos writes an admin kubeconfig: with more, which one
	// to use would be a guess.
	if len(kc.Clusters) != 1 || len(kc.Users) != 1 {
		return nil, "", fmt.Errorf("the kubeconfig has %d clusters and %d users, want one of each", len(kc.Clusters), len(kc.Users))
	}
	dec := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }
	pair, err := tls.X509KeyPair(dec(kc.Users[0].User.Cert), dec(kc.Users[0].User.Key))
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(dec(kc.Clusters[0].Cluster.CA)) {
		return nil, "", fmt.Errorf("kubeconfig has no CA certificate")
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
	}}, kc.Clusters[0].Cluster.Server, nil
}

// Nodes lists the cluster's nodes through the kubeconfig's server (or
// server, when not empty), authenticating with its client certificate.
func Nodes(kubeconfigYAML []byte, server string) ([]Node, error) {
	client, kcServer, err := Client(kubeconfigYAML)
	if err != nil {
		return nil, err
	}
	client.Timeout = 10 * time.Second
	if server == "" {
		server = kcServer
	}
	resp, err := client.Get(strings.TrimSuffix(server, "/") + "/api/v1/nodes")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/api/v1/nodes: %s: %s", server, resp.Status, body)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				ProviderID string `json:"providerID"`
			} `json:"spec"`
			Status struct {
				Conditions []struct{ Type, Status string }  `json:"conditions"`
				Addresses  []struct{ Type, Address string } `json:"addresses"`
				NodeInfo   struct {
					KubeletVersion string `json:"kubeletVersion"`
				} `json:"nodeInfo"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding the node list: %w", err)
	}
	var out []Node
	for _, it := range list.Items {
		n := Node{Name: it.Metadata.Name, ProviderID: it.Spec.ProviderID, Version: it.Status.NodeInfo.KubeletVersion, Labels: it.Metadata.Labels}
		for _, c := range it.Status.Conditions {
			if c.Type == "Ready" {
				n.Ready = c.Status == "True"
			}
		}
		for _, a := range it.Status.Addresses {
			if a.Type == "InternalIP" {
				n.InternalIP = a.Address
			}
		}
		for l := range it.Metadata.Labels {
			if r, ok := strings.CutPrefix(l, "node-role.kubernetes.io/"); ok {
				n.Roles = append(n.Roles, r)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// Print writes nodes like `kubectl get nodes -o wide`, with the providerID.
func Print(w io.Writer, nodes []Node) {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tROLES\tVERSION\tINTERNAL-IP\tPROVIDER-ID")
	for _, n := range nodes {
		status, roles, id := "NotReady", "<none>", n.ProviderID
		if n.Ready {
			status = "Ready"
		}
		if len(n.Roles) > 0 {
			roles = strings.Join(n.Roles, ",")
		}
		if id == "" {
			id = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, status, roles, n.Version, n.InternalIP, id)
	}
	tw.Flush()
}
