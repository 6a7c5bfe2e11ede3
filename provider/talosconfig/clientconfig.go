package talosconfig

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	cryptox509 "github.com/siderolabs/crypto/x509"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/role"
)

// DefaultAdminCertificateTTL is how long an admin client certificate is valid:
// one year, as talosctl issues them (constants.TalosAPIDefaultCertificateValidityDuration).
const DefaultAdminCertificateTTL = 365 * 24 * time.Hour

// clockSkew backdates NotBefore so that a node whose clock is a few minutes
// behind ours still accepts a certificate issued just now.
const clockSkew = 5 * time.Minute

// ClientCertificate is a Talos API client certificate and its private key, PEM.
type ClientCertificate struct {
	CertPEM []byte
	KeyPEM  []byte // secret
}

// NewAdminCertificate issues a client certificate with the os:admin role,
// signed by the bundle's Talos API CA, valid from now (less a small clock-skew
// allowance) until now+ttl.
func NewAdminCertificate(bundle *secrets.Bundle, now time.Time, ttl time.Duration) (ClientCertificate, error) {
	if bundle == nil || bundle.Certs == nil || bundle.Certs.OS == nil {
		return ClientCertificate{}, fmt.Errorf("secrets bundle has no Talos API CA (certs.os)")
	}
	if ttl <= 0 {
		return ClientCertificate{}, fmt.Errorf("admin certificate lifetime must be positive, got %s", ttl)
	}
	pair, err := secrets.NewAdminCertificateAndKey(now.Add(-clockSkew), bundle.Certs.OS, role.MakeSet(role.Admin), ttl+clockSkew)
	if err != nil {
		return ClientCertificate{}, fmt.Errorf("issuing the admin client certificate: %w", err)
	}
	return ClientCertificate{CertPEM: pair.Crt, KeyPEM: pair.Key}, nil
}

// CertificateNotAfter returns the expiry of a PEM certificate.
func CertificateNotAfter(certPEM []byte) (time.Time, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return time.Time{}, fmt.Errorf("client certificate is not a PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, fmt.Errorf("client certificate does not parse: %w", err)
	}
	return cert.NotAfter, nil
}

// NeedsRenewal reports whether a certificate expires within window of now
// (or has expired). A certificate that does not parse needs renewal too.
func NeedsRenewal(certPEM []byte, now time.Time, window time.Duration) bool {
	notAfter, err := CertificateNotAfter(certPEM)
	if err != nil {
		return true
	}
	return !now.Add(window).Before(notAfter)
}

// ClientConfiguration renders a talosconfig (the file talosctl reads) with one
// context named contextName. Endpoints are the addresses talosctl connects to
// (control plane node addresses; never the VIP, which only exists once etcd
// runs); nodes are the default targets. The result holds a private key.
func ClientConfiguration(contextName string, endpoints, nodes []string, caPEM []byte, client ClientCertificate) (string, error) {
	if strings.TrimSpace(contextName) == "" {
		return "", fmt.Errorf("talosconfig context name is empty: use the cluster name")
	}
	if len(endpoints) == 0 {
		return "", fmt.Errorf("talosconfig needs at least one endpoint: give the control plane node addresses")
	}
	for i, e := range endpoints {
		if strings.TrimSpace(e) == "" {
			return "", fmt.Errorf("talosconfig endpoint %d is empty", i)
		}
	}
	if len(caPEM) == 0 || len(client.CertPEM) == 0 || len(client.KeyPEM) == 0 {
		return "", fmt.Errorf("talosconfig needs the Talos API CA certificate and a client certificate and key")
	}
	cfg := clientconfig.NewConfig(contextName, endpoints, caPEM, &cryptox509.PEMEncodedCertificateAndKey{Crt: client.CertPEM, Key: client.KeyPEM})
	if len(nodes) > 0 {
		cfg.Contexts[contextName].Nodes = nodes
	}
	out, err := cfg.Bytes()
	if err != nil {
		return "", fmt.Errorf("encoding the talosconfig: %w", err)
	}
	return string(out), nil
}
