package talosapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// kubeAPI is a minimal Kubernetes API client authenticated with a
// kubeconfig's client certificate: enough for /readyz and the node list,
// without pulling client-go into the provider.
type kubeAPI struct {
	server string
	http   *http.Client
}

func newKubeAPI(info *KubeconfigInfo, server string) (*kubeAPI, error) {
	if server == "" {
		server = info.Server
	}

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(info.CA) {
		return nil, errors.New("kubeconfig has no certificate authority data")
	}

	pair, err := tls.X509KeyPair(info.ClientCert, info.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig client certificate and key do not form a key pair: %w", err)
	}

	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		Proxy:               http.ProxyFromEnvironment,
	}

	return &kubeAPI{server: strings.TrimSuffix(server, "/"), http: &http.Client{Transport: tr}}, nil
}

func (k *kubeAPI) close() { k.http.CloseIdleConnections() }

// get fetches a path and returns the body of a 200 answer.
func (k *kubeAPI) get(ctx context.Context, path string) ([]byte, error) {
	status, body, err := k.do(ctx, http.MethodGet, path)
	if err != nil {
		return nil, err
	}

	if status != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", path, status, short(body))
	}

	return body, nil
}

// do sends a request without a body and returns the status and body.
func (k *kubeAPI) do(ctx context.Context, method, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, k.server+path, nil)
	if err != nil {
		return 0, nil, err
	}

	resp, err := k.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close() //nolint:errcheck

	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))

	return resp.StatusCode, body, err
}

// send sends a request with a body and returns the status and body.
func (k *kubeAPI) send(ctx context.Context, method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, k.server+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}

	req.Header.Set("Content-Type", contentType)

	resp, err := k.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close() //nolint:errcheck

	answer, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))

	return resp.StatusCode, answer, err
}

// short is the start of an answer's body, for an error message.
func short(b []byte) string {
	return strings.TrimSpace(string(b[:min(len(b), 200)]))
}

// kubeNode is the part of a Node object the provider reads.
type kubeNode struct {
	Name      string
	Addresses []string
	Ready     bool
	ReadyMsg  string
	// ReadyPosted is the Ready condition's lastHeartbeatTime: when a
	// kubelet last posted it (zero when absent).
	ReadyPosted   time.Time
	ProviderID    string
	Unschedulable bool
}

// nodeObject is a Node object (core/v1), reduced to those fields.
type nodeObject struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		ProviderID    string `json:"providerID"`
		Unschedulable bool   `json:"unschedulable"`
	} `json:"spec"`
	Status struct {
		Addresses []struct {
			Type    string `json:"type"`
			Address string `json:"address"`
		} `json:"addresses"`
		Conditions []struct {
			Type          string `json:"type"`
			Status        string `json:"status"`
			Message       string `json:"message"`
			LastHeartbeat string `json:"lastHeartbeatTime"`
		} `json:"conditions"`
	} `json:"status"`
}

func (it *nodeObject) node() kubeNode {
	n := kubeNode{Name: it.Metadata.Name, ProviderID: it.Spec.ProviderID, Unschedulable: it.Spec.Unschedulable}

	for _, a := range it.Status.Addresses {
		n.Addresses = append(n.Addresses, a.Address)
	}

	for _, c := range it.Status.Conditions {
		if c.Type == "Ready" {
			n.Ready = c.Status == "True"
			n.ReadyMsg = c.Message
			// metav1.Time: RFC 3339 in whole seconds; anything else is
			// treated as not known.
			n.ReadyPosted, _ = time.Parse(time.RFC3339, c.LastHeartbeat)
		}
	}

	return n
}

// parseNodes reads a /api/v1/nodes answer.
func parseNodes(body []byte) ([]kubeNode, error) {
	var l struct {
		Items []nodeObject `json:"items"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("node list is not JSON: %w", err)
	}

	out := make([]kubeNode, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, l.Items[i].node())
	}

	return out, nil
}

// parseNode reads a /api/v1/nodes/<name> answer.
func parseNode(body []byte) (kubeNode, error) {
	var o nodeObject
	if err := json.Unmarshal(body, &o); err != nil {
		return kubeNode{}, fmt.Errorf("node object is not JSON: %w", err)
	}

	return o.node(), nil
}
