package talos

import (
	"bytes"
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/siderolabs/crypto/x509"
)

// kubeClient is how the lab's simulated components (kubelets, controllers,
// Talos's own Kubernetes calls) talk to the real apiserver: plain HTTPS with
// a client certificate from the cluster CA, JSON bodies, as any client does.
// The lab keeps client-go out of the repository's module (see README).
type kubeClient struct {
	addr func() string
	http *http.Client
	ua   string
	err  error
	// wrote, when set, counts the requests that change something.
	wrote func()
}

func newKubeClient(p *kubePKI, addr func() string, user string, groups []string) (*kubeClient, error) {
	kp, err := x509.NewKeyPair(p.ca,
		x509.CommonName(user),
		x509.Organization(groups...),
		x509.NotBefore(time.Now().Add(-time.Minute)),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature|stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}),
	)
	if err != nil {
		return nil, err
	}

	cert, err := keyPairToTLS(kp)
	if err != nil {
		return nil, err
	}

	pool, err := certPool(p.cfg.Cluster().IssuingCA().Crt)
	if err != nil {
		return nil, err
	}

	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}

	return &kubeClient{addr: addr, http: &http.Client{Transport: tr, Timeout: 20 * time.Second}, ua: user}, nil
}

// as returns a client sending another User-Agent (the field manager name
// the apiserver records for updates).
func (c *kubeClient) as(ua string) *kubeClient {
	cp := *c
	cp.ua = ua

	return &cp
}

func (c *kubeClient) close() {
	if c.http != nil {
		c.http.CloseIdleConnections()
	}
}

// kubeError is a non-2xx answer, with the Status object's reason.
type kubeError struct {
	Code    int
	Reason  string
	Message string
}

func (e *kubeError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Code, e.Reason, e.Message)
}

func isKubeStatus(err error, code int) bool {
	var ke *kubeError

	return errors.As(err, &ke) && ke.Code == code
}

// do sends a request; body is JSON-encoded unless it is []byte; out, when
// not nil, receives the decoded answer.
func (c *kubeClient) do(ctx context.Context, method, path, contentType string, body, out any) error {
	if c.err != nil {
		return c.err
	}

	var rd io.Reader

	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return err
		}

		rd = bytes.NewReader(data)
	}

	req, err := http.NewRequestWithContext(ctx, method, "https://"+c.addr()+path, rd)
	if err != nil {
		return err
	}

	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)

	if c.wrote != nil && method != http.MethodGet {
		c.wrote()
	}

	if rd != nil {
		if contentType == "" {
			contentType = "application/json"
		}

		req.Header.Set("Content-Type", contentType)
	}

	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck

	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}

	if resp.StatusCode/100 != 2 {
		var st struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}

		json.Unmarshal(data, &st) //nolint:errcheck // a non-Status body keeps the message empty

		if st.Message == "" {
			st.Message = string(data[:min(len(data), 200)])
		}

		return &kubeError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
	}

	if out != nil {
		return json.Unmarshal(data, out)
	}

	return nil
}

// raw GETs a non-resource path (/readyz, /version).
func (c *kubeClient) raw(ctx context.Context, path string) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.addr()+path, nil)
	if err != nil {
		return nil, err
	}

	req.Header.Set("User-Agent", c.ua)

	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close() //nolint:errcheck

	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}

	if resp.StatusCode != http.StatusOK {
		return body, &kubeError{Code: resp.StatusCode, Message: string(body)}
	}

	return body, nil
}

// obj is a Kubernetes object as JSON: read-modify-write keeps every field
// the lab does not know about.
type obj = map[string]any

func field(o obj, path ...string) any {
	var cur any = o

	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}

		cur = m[p]
	}

	return cur
}

func fieldMap(o obj, path ...string) map[string]any {
	cur := o

	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}

		cur = next
	}

	return cur
}

func fieldString(o obj, path ...string) string {
	s, _ := field(o, path...).(string)

	return s
}
