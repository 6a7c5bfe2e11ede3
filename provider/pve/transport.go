package pve

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// statusTransport turns HTTP answers that go-proxmox would misread into
// errors. go-proxmox understands 400, 500 and 501; it turns 401 and 403 into
// its ErrNotAuthorized, dropping Proxmox's reason ("Permission check failed
// (/vms/104, VM.Allocate)"), and any other non-2xx status (a 502 from a
// proxy, a 596 between cluster nodes) it would try to decode as data, losing
// the status. Those become *APIError here, with the reason phrase.
type statusTransport struct{ base http.RoundTripper }

func (t statusTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch c := res.StatusCode; {
	case c < 300, c == 400, c == 500, c == 501:
		return res, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	_ = res.Body.Close()
	msg := strings.TrimSpace(strings.TrimPrefix(res.Status, strconv.Itoa(res.StatusCode)))
	return nil, &APIError{Method: req.Method, Path: req.URL.Path, Status: res.StatusCode, Message: msg}
}

// newHTTPClient builds the HTTP client: TLS verified against the system roots
// plus caPEM, or not verified at all when insecure is set.
func newHTTPClient(insecure bool, caPEM string, timeout time.Duration) (*http.Client, error) {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if insecure {
		tlsConf.InsecureSkipVerify = true //nolint:gosec // the user asked for it with `insecure: true`
	} else if strings.TrimSpace(caPEM) != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(caPEM)) {
			return nil, fmt.Errorf("`caCert` holds no PEM certificate: give the PEM text " +
				"(-----BEGIN CERTIFICATE-----...) of the CA that signed the Proxmox VE host certificate")
		}
		tlsConf.RootCAs = pool
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tlsConf
	base.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: statusTransport{base: base}, Timeout: timeout}, nil
}
