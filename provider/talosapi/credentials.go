package talosapi

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
)

// Credentials are the client side of the Talos API mTLS handshake: the
// cluster's OS CA (to verify apid's server certificate) and a client
// certificate signed by it (its organisation carries the role, e.g. os:admin).
// All three are PEM.
type Credentials struct {
	CA   []byte
	Cert []byte
	Key  []byte
}

// CredentialsFromTalosconfig reads the credentials of one context of a
// talosconfig document (the file talosctl uses). An empty context name means
// the document's current context.
func CredentialsFromTalosconfig(talosconfig []byte, contextName string) (*Credentials, error) {
	cfg, err := clientconfig.FromBytes(talosconfig)
	if err != nil {
		return nil, fmt.Errorf("talosconfig is not a valid talosconfig document: %w", err)
	}

	if contextName == "" {
		contextName = cfg.Context
	}

	tctx, ok := cfg.Contexts[contextName]
	if !ok {
		return nil, fmt.Errorf("talosconfig has no context %q (it has %d contexts)", contextName, len(cfg.Contexts))
	}

	creds := &Credentials{}

	for _, f := range []struct {
		name string
		in   string
		out  *[]byte
	}{{"ca", tctx.CA, &creds.CA}, {"crt", tctx.Crt, &creds.Cert}, {"key", tctx.Key, &creds.Key}} {
		b, err := base64.StdEncoding.DecodeString(f.in)
		if err != nil {
			return nil, fmt.Errorf("talosconfig context %q: field %s is not base64", contextName, f.name)
		}

		*f.out = b
	}

	return creds, creds.Validate()
}

// DecodePEMOrBase64 accepts a PEM block as text or base64-encoded PEM (the
// form talosconfig files and terraform-provider-talos use) and returns PEM.
func DecodePEMOrBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-----BEGIN ") {
		return []byte(s + "\n"), nil
	}

	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("neither PEM text nor base64-encoded PEM")
	}

	if !strings.HasPrefix(strings.TrimSpace(string(b)), "-----BEGIN ") {
		return nil, errors.New("base64 decodes to something that is not PEM")
	}

	return b, nil
}

// Validate checks that the credentials parse, without saying anything about
// their contents in the error (they are secrets).
func (c *Credentials) Validate() error {
	_, err := c.tlsConfig()

	return err
}

// tlsConfig is the client TLS configuration for apid: verify the server
// against the OS CA, present the client certificate. This is what machinery's
// client builds from a talosconfig context (client/connection.go buildTLSConfig).
func (c *Credentials) tlsConfig() (*tls.Config, error) {
	if c == nil {
		return nil, errors.New("no client credentials: an mTLS connection needs the cluster's client configuration (CA, client certificate and key)")
	}

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CA) {
		return nil, errors.New("client configuration: the CA certificate is not a PEM certificate")
	}

	pair, err := tls.X509KeyPair(c.Cert, c.Key)
	if err != nil {
		// tls.X509KeyPair's messages never include key material.
		return nil, fmt.Errorf("client configuration: client certificate and key do not form a key pair: %w", err)
	}

	return &tls.Config{
		RootCAs:      pool,
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS12,
	}, nil
}
