package talosapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
)

// tlsHello is what a TLS handshake tells about the server on a node's port.
type tlsHello struct {
	// wantsClientCert: the server sent a CertificateRequest. apid does
	// (tls.Mutual); the maintenance server does not (tls.ServerOnly in
	// siderolabs/talos internal/app/maintenance/provider.go).
	wantsClientCert bool
	// chain is the server's certificate chain, leaf first.
	chain []*x509.Certificate
}

// helloTLS performs a TLS handshake with addr and records whether the server
// asks for a client certificate. It sends none. A gRPC call cannot answer
// this reliably: after a TLS 1.3 server rejects a missing client
// certificate, the client sees either the alert or a broken pipe, whichever
// wins the race.
func helloTLS(ctx context.Context, addr string) (tlsHello, error) {
	var h tlsHello

	cfg := &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // we only look at the server, and send nothing
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{"h2"},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			h.wantsClientCert = true

			return &tls.Certificate{}, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			h.chain = cs.PeerCertificates

			return nil
		},
	}

	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: cfg}

	conn, err := d.DialContext(ctx, "tcp", addr)
	if conn != nil {
		conn.Close() //nolint:errcheck
	}

	// With TLS 1.2 the server may abort the handshake once it sees no client
	// certificate; what we wanted to learn is known by then.
	if err != nil && !h.wantsClientCert {
		return h, err
	}

	if len(h.chain) == 0 && !h.wantsClientCert {
		return h, errors.New("TLS handshake ended without a server certificate")
	}

	return h, nil
}

// verifyChain checks the server's chain against the cluster's OS CA.
func verifyChain(chain []*x509.Certificate, caPEM []byte) error {
	if len(chain) == 0 {
		return errors.New("the server sent no certificate")
	}

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("the client configuration's CA is not a PEM certificate")
	}

	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}

	_, err := chain[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return fmt.Errorf("its certificate is not signed by this cluster's OS CA (%w)", err)
	}

	return nil
}
