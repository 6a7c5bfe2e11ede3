package talos

import (
	"crypto/tls"
	stdx509 "crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/siderolabs/crypto/x509"

	"github.com/siderolabs/talos/pkg/machinery/role"
)

const certLifetime = 365 * 24 * time.Hour

func ipList(addrs []netip.Addr) []net.IP {
	out := make([]net.IP, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, net.IP(a.AsSlice()))
	}

	return out
}

func keyPairToTLS(kp *x509.KeyPair) (tls.Certificate, error) {
	pem := x509.NewCertificateAndKeyFromKeyPair(kp)

	return tls.X509KeyPair(pem.Crt, pem.Key)
}

// maintenanceCert is the maintenance service's certificate: issued by a
// throwaway root generated on the node (internal/app/machined/pkg/controllers/
// secrets/maintenance.go), so clients connect with --insecure.
func maintenanceCert(addr netip.Addr, hostname string) (tls.Certificate, error) {
	ca, err := x509.NewSelfSignedCertificateAuthority(x509.ECDSA(true), x509.Organization("talos"))
	if err != nil {
		return tls.Certificate{}, err
	}

	opts := []x509.Option{
		x509.CommonName(hostname),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}),
	}
	if addr.IsValid() {
		opts = append(opts, x509.IPAddresses(ipList([]netip.Addr{addr})))
	}

	if hostname != "" {
		opts = append(opts, x509.DNSNames([]string{hostname}))
	}

	kp, err := x509.NewKeyPair(ca, opts...)
	if err != nil {
		return tls.Certificate{}, err
	}

	return keyPairToTLS(kp)
}

// osIssuer signs Talos API certificates with the machine's OS CA. Control
// planes hold the CA key; workers get their apid certificate from trustd on a
// control plane (see cluster reconciliation), which holds the same CA.
type osIssuer struct {
	ca *x509.CertificateAuthority
}

func newOSIssuer(ca *x509.PEMEncodedCertificateAndKey) (*osIssuer, error) {
	if ca == nil || len(ca.Crt) == 0 || len(ca.Key) == 0 {
		return nil, errors.New("machine.ca has no key")
	}

	auth, err := x509.NewCertificateAuthorityFromCertificateAndKey(ca)
	if err != nil {
		return nil, fmt.Errorf("machine.ca: %w", err)
	}

	return &osIssuer{ca: auth}, nil
}

// serverCert is apid's serving certificate: node addresses and cert SANs.
func (i *osIssuer) serverCert(hostname string, addrs []netip.Addr, dnsNames []string) (tls.Certificate, error) {
	names := slices.Clone(dnsNames)
	if hostname != "" {
		names = append(names, hostname)
	}

	kp, err := x509.NewKeyPair(i.ca,
		x509.CommonName(hostname),
		x509.IPAddresses(ipList(addrs)),
		x509.DNSNames(names),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}),
	)
	if err != nil {
		return tls.Certificate{}, err
	}

	return keyPairToTLS(kp)
}

// clientCert is the certificate apid uses to forward calls to other nodes,
// with the impersonator role so the peer trusts the roles it passes along.
func (i *osIssuer) clientCert() (tls.Certificate, error) {
	kp, err := x509.NewKeyPair(i.ca,
		x509.CommonName("apid"),
		x509.Organization(string(role.Impersonator)),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}),
	)
	if err != nil {
		return tls.Certificate{}, err
	}

	return keyPairToTLS(kp)
}

// certPool builds a pool from PEM certificates.
func certPool(pems ...[]byte) (*stdx509.CertPool, error) {
	pool := stdx509.NewCertPool()

	for _, p := range pems {
		if len(p) == 0 {
			continue
		}

		if !pool.AppendCertsFromPEM(p) {
			return nil, errors.New("bad CA certificate PEM")
		}
	}

	return pool, nil
}

// verifyClientExtKeyUsage is apid's check that client certificates are
// client certificates (internal/app/apid/main.go, verifyExtKeyUsage).
func verifyClientExtKeyUsage(_ [][]byte, chains [][]*stdx509.Certificate) error {
	if len(chains) == 0 {
		return errors.New("no verified chains")
	}

	for _, cert := range chains[0] {
		if cert.IsCA {
			continue
		}

		if !slices.Equal(cert.ExtKeyUsage, []stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}) {
			return fmt.Errorf("certificate %q is missing the client auth extended key usage", cert.Subject)
		}
	}

	return nil
}
