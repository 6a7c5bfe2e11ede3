package talos

import (
	"bytes"
	stdx509 "crypto/x509"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/siderolabs/crypto/x509"
	"gopkg.in/yaml.v3"

	"github.com/siderolabs/talos/pkg/machinery/config"
	cfgtypes "github.com/siderolabs/talos/pkg/machinery/config/config"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// kubePKI holds the files kube-apiserver and etcd run with, made from the
// machine config's cluster secrets as Talos makes them
// (internal/app/machined/pkg/controllers/secrets/kubernetes.go, etcd.go):
// the cluster CA signs the serving certificate and is the client CA, the
// etcd CA signs etcd's certificates and the apiserver's etcd client
// certificate, the aggregator CA the front proxy's, and the service account
// key signs and verifies tokens.
type kubePKI struct {
	dir string
	cfg config.Provider
	ca  *x509.CertificateAuthority
}

func newKubePKI(dir string, cfg config.Provider) (*kubePKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}

	cl := cfg.Cluster()

	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(cl.IssuingCA())
	if err != nil {
		return nil, fmt.Errorf("cluster.ca: %w", err)
	}

	p := &kubePKI{dir: dir, cfg: cfg, ca: ca}

	clientCAs := slices2(cl.IssuingCA().Crt)
	for _, a := range cl.AcceptedCAs() {
		clientCAs = append(clientCAs, a.Crt...)
	}

	if err := p.write("ca.crt", clientCAs); err != nil {
		return nil, err
	}

	if err := p.write("sa.key", cl.ServiceAccount().Key); err != nil {
		return nil, err
	}

	if err := p.writeEtcd(cl); err != nil {
		return nil, err
	}

	if err := p.writeAggregator(cl); err != nil {
		return nil, err
	}

	if err := p.writeKubeletClient(); err != nil {
		return nil, err
	}

	if err := p.writeConfigs(cl); err != nil {
		return nil, err
	}

	return p, nil
}

func slices2(b []byte) []byte { return append([]byte(nil), b...) }

// samePKI: two configs carry the same cluster secrets.
func samePKI(a, b config.Provider) bool {
	if a == nil || b == nil {
		return false
	}

	ca, cb := a.Cluster(), b.Cluster()

	return bytes.Equal(ca.IssuingCA().Crt, cb.IssuingCA().Crt) && bytes.Equal(ca.Etcd().CA().Crt, cb.Etcd().CA().Crt) &&
		bytes.Equal(ca.ServiceAccount().Key, cb.ServiceAccount().Key) && ca.Endpoint().String() == cb.Endpoint().String()
}

func (p *kubePKI) path(name string) string { return filepath.Join(p.dir, name) }

// write replaces a file atomically (the apiserver watches its serving
// certificate and must never read half of one).
func (p *kubePKI) write(name string, data []byte) error {
	tmp := p.path("." + name + ".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}

	return os.Rename(tmp, p.path(name))
}

func (p *kubePKI) writePair(name string, kp *x509.KeyPair) error {
	pem := x509.NewCertificateAndKeyFromKeyPair(kp)
	if err := p.write(name+".crt", pem.Crt); err != nil {
		return err
	}

	return p.write(name+".key", pem.Key)
}

func (p *kubePKI) writeEtcd(cl cfgtypes.ClusterConfig) error {
	etcdCA, err := x509.NewCertificateAuthorityFromCertificateAndKey(cl.Etcd().CA())
	if err != nil {
		return fmt.Errorf("cluster.etcd.ca: %w", err)
	}

	if err := p.write("etcd-ca.crt", cl.Etcd().CA().Crt); err != nil {
		return err
	}

	client, err := x509.NewKeyPair(etcdCA,
		x509.CommonName("kube-apiserver"),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature|stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}),
	)
	if err != nil {
		return err
	}

	return p.writePair("apiserver-etcd-client", client)
}

// writeKubeletClient: the apiserver's client certificate for the kubelets'
// API (logs, exec), from the cluster CA in system:masters
// (secrets/kubernetes_dynamic_certs.go).
func (p *kubePKI) writeKubeletClient() error {
	kp, err := x509.NewKeyPair(p.ca,
		x509.CommonName(constants.KubernetesAPIServerKubeletClientCommonName),
		x509.Organization(constants.KubernetesAdminCertOrganization),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature|stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}),
	)
	if err != nil {
		return err
	}

	return p.writePair("apiserver-kubelet-client", kp)
}

func (p *kubePKI) writeAggregator(cl cfgtypes.ClusterConfig) error {
	agg := cl.AggregatorCA()
	if agg == nil || len(agg.Key) == 0 {
		return nil
	}

	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(agg)
	if err != nil {
		return fmt.Errorf("cluster.aggregatorCA: %w", err)
	}

	if err := p.write("aggregator-ca.crt", agg.Crt); err != nil {
		return err
	}

	kp, err := x509.NewKeyPair(ca,
		x509.CommonName("front-proxy-client"),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature|stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}),
	)
	if err != nil {
		return err
	}

	return p.writePair("front-proxy-client", kp)
}

// writeConfigs: encryption at rest with the cluster's secretbox (or, on
// clusters made before Talos 0.13, aescbc) key, and the admission control
// configuration (Talos's default PodSecurity settings), as Talos renders
// them for the kube-apiserver static pod.
func (p *kubePKI) writeConfigs(cl cfgtypes.ClusterConfig) error {
	type key struct {
		Name   string `yaml:"name"`
		Secret string `yaml:"secret"`
	}

	var providers []map[string]any

	if s := cl.SecretboxEncryptionSecret(); s != "" {
		providers = append(providers, map[string]any{"secretbox": map[string]any{"keys": []key{{"key2", s}}}})
	}

	if s := cl.AESCBCEncryptionSecret(); s != "" {
		providers = append(providers, map[string]any{"aescbc": map[string]any{"keys": []key{{"key1", s}}}})
	}

	providers = append(providers, map[string]any{"identity": map[string]any{}})

	enc, err := yaml.Marshal(map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "EncryptionConfiguration",
		"resources":  []map[string]any{{"resources": []string{"secrets"}, "providers": providers}},
	})
	if err != nil {
		return err
	}

	if err := p.write("encryptionconfig.yaml", enc); err != nil {
		return err
	}

	plugins := []map[string]any{}
	for _, a := range cl.APIServer().AdmissionControl() {
		plugins = append(plugins, map[string]any{"name": a.Name(), "configuration": a.Configuration()})
	}

	adm, err := yaml.Marshal(map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "AdmissionConfiguration",
		"plugins":    plugins,
	})
	if err != nil {
		return err
	}

	return p.write("admission-control-config.yaml", adm)
}

// writeServing issues the apiserver's serving certificate for the addresses
// clients reach it on, with the names kube-apiserver's certificate has on a
// Talos control plane (kubernetes.default…, cluster.apiServer.certSANs, the
// endpoint's host).
func (p *kubePKI) writeServing(cfg config.Provider, sans []netip.Addr) error {
	cl := cfg.Cluster()

	ips := append([]netip.Addr{netip.MustParseAddr("127.0.0.1")}, sans...)
	if svc, err := cl.Network().APIServerIPs(); err == nil {
		ips = append(ips, svc...)
	}

	dns := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + cl.Network().DNSDomain(), "localhost"}

	names := cl.CertSANs()
	if u := cl.Endpoint(); u != nil {
		names = append(names, u.Hostname())
	}

	for _, name := range names {
		if a, err := netip.ParseAddr(name); err == nil {
			ips = append(ips, a)
		} else if name != "" {
			dns = append(dns, name)
		}
	}

	kp, err := x509.NewKeyPair(p.ca,
		x509.CommonName("kube-apiserver"),
		x509.IPAddresses(ipList(ips)),
		x509.DNSNames(dns),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature|stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}),
	)
	if err != nil {
		return fmt.Errorf("kube-apiserver serving certificate: %w", err)
	}

	// Key first: the apiserver reloads when the certificate changes.
	pem := x509.NewCertificateAndKeyFromKeyPair(kp)
	if err := p.write("apiserver.key", pem.Key); err != nil {
		return err
	}

	return p.write("apiserver.crt", pem.Crt)
}

// apiServerArgs are Talos's kube-apiserver flags
// (internal/app/machined/pkg/controllers/k8s/control_plane_static_pod.go,
// manageAPIServer) with the lab's files, bound to loopback; the listeners
// on the control planes' addresses forward to it.
func (p *kubePKI) apiServerArgs(w kubeWant, etcdURL string, port int) []string {
	cl := w.cfg.Cluster()
	endpoint := cl.Endpoint().String()

	args := []string{
		"--admission-control-config-file=" + p.path("admission-control-config.yaml"),
		"--allow-privileged=true",
		"--anonymous-auth=false",
		"--api-audiences=" + endpoint,
		"--authorization-mode=Node,RBAC",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--client-ca-file=" + p.path("ca.crt"),
		"--enable-admission-plugins=NodeRestriction",
		"--enable-bootstrap-token-auth=true",
		"--encryption-provider-config=" + p.path("encryptionconfig.yaml"),
		"--etcd-cafile=" + p.path("etcd-ca.crt"),
		"--etcd-certfile=" + p.path("apiserver-etcd-client.crt"),
		"--etcd-keyfile=" + p.path("apiserver-etcd-client.key"),
		"--etcd-servers=" + etcdURL,
		"--profiling=false",
		"--service-account-issuer=" + endpoint,
		"--service-account-key-file=" + p.path("sa.key"),
		"--service-account-signing-key-file=" + p.path("sa.key"),
		"--service-cluster-ip-range=" + strings.Join(cl.Network().ServiceCIDRs(), ","),
		"--tls-cert-file=" + p.path("apiserver.crt"),
		"--tls-private-key-file=" + p.path("apiserver.key"),
		"--tls-min-version=VersionTLS12",
		"--kubelet-client-certificate=" + p.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + p.path("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		// Lab only: the addresses are loopback ones, which Kubernetes refuses
		// as endpoint addresses, so the `kubernetes` Service has none.
		"--endpoint-reconciler-type=none",
	}

	if _, err := os.Stat(p.path("aggregator-ca.crt")); err == nil {
		args = append(args,
			"--requestheader-client-ca-file="+p.path("aggregator-ca.crt"),
			"--requestheader-allowed-names=front-proxy-client",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-username-headers=X-Remote-User",
			"--proxy-client-cert-file="+p.path("front-proxy-client.crt"),
			"--proxy-client-key-file="+p.path("front-proxy-client.key"),
		)
	}

	if w.emulate != "" {
		args = append(args, "--emulated-version="+w.emulate)
	}

	return args
}

// client is a client of the apiserver with a certificate from the cluster
// CA: the lab's controllers act as system:masters, kubelets as their nodes.
func (p *kubePKI) client(addr func() string, user string, groups ...string) *kubeClient {
	c, err := newKubeClient(p, addr, user, groups)
	if err != nil {
		return &kubeClient{err: err}
	}

	return c
}
