package pve

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
)

// HoldProxy is a TLS proxy in front of a lab endpoint for tests of a node
// that answers, but slowly (on real PVE an unreachable NFS/CIFS/PBS storage
// makes its storage reads outlive any client timeout): every request that
// held picks waits until the first request to the release path has come
// (or its client gives up), then goes through. Held and Releases count them.
type HoldProxy struct {
	srv      *httptest.Server
	Held     atomic.Int32
	Releases atomic.Int32
}

// NewHoldProxy starts a proxy to endpoint, whose certificate caPEM signs.
func NewHoldProxy(endpoint string, caPEM []byte, release string, held func(path string) bool) (*HoldProxy, error) {
	target, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)

	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}

	p := &HoldProxy{}
	released := make(chan struct{})
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == release:
			if p.Releases.Add(1) == 1 {
				close(released)
			}
		case held(r.URL.Path):
			p.Held.Add(1)
			select {
			case <-released:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))

	return p, nil
}

// URL is the proxy's endpoint.
func (p *HoldProxy) URL() string { return p.srv.URL }

// CACertPEM is the certificate a client of the proxy trusts.
func (p *HoldProxy) CACertPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}))
}

// Close stops the proxy.
func (p *HoldProxy) Close() { p.srv.Close() }
