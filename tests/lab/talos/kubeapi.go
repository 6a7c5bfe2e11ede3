package talos

import (
	"crypto/tls"
	stdx509 "crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/siderolabs/crypto/x509"
)

// kubeServer is kube-apiserver on one address (a control plane's address or
// the VIP), backed by the cluster's simulated objects. It serves the few
// endpoints the provider uses: /readyz, /livez, /healthz, /version,
// discovery (/api, /apis), /api/v1/nodes and kubelet serving CSRs, with
// client certificate auth.
type kubeServer struct {
	sim     *Sim
	cluster *cluster
	addr    netip.AddrPort

	srv *http.Server
}

func (k *kubeServer) start() {
	s := k.sim

	s.mu.Lock()
	node := k.cluster.serving[k.addr]

	var tlsCfg *tls.Config

	var err error

	if node != nil && node.active != nil {
		tlsCfg, err = apiServerTLS(node, k.addr.Addr(), k.cluster)
	}
	s.mu.Unlock()

	if node == nil {
		return
	}

	if err != nil {
		node.logf("kube-apiserver cannot serve", "error", err)

		return
	}

	l, err := net.Listen("tcp", k.addr.String())
	if err != nil {
		node.logf("kube-apiserver cannot listen", "address", k.addr.String(), "error", err)

		return
	}

	k.srv = &http.Server{
		Handler:           http.HandlerFunc(k.serveHTTP),
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}

	go k.srv.ServeTLS(l, "", "") //nolint:errcheck
}

func (k *kubeServer) stop() {
	if k.srv != nil {
		k.srv.Close() //nolint:errcheck
	}
}

// apiServerTLS: a serving certificate from the cluster CA with the names
// kube-apiserver's certificate has (node addresses, the VIPs, the endpoint,
// cluster.apiServer.certSANs, kubernetes.default...), and client
// certificates verified against the cluster CA.
func apiServerTLS(n *Node, addr netip.Addr, c *cluster) (*tls.Config, error) {
	cl := n.active.Cluster()

	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(cl.IssuingCA())
	if err != nil {
		return nil, fmt.Errorf("cluster.ca: %w", err)
	}

	ips := []netip.Addr{addr, n.addr}
	dns := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + cl.Network().DNSDomain(), "localhost", strings.ToLower(n.hostname)}

	for vip := range c.vipLeader {
		ips = append(ips, vip)
	}

	names := slices.Clone(cl.CertSANs())
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

	kp, err := x509.NewKeyPair(ca,
		x509.CommonName("kube-apiserver"),
		x509.IPAddresses(ipList(ips)),
		x509.DNSNames(dns),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature|stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}),
	)
	if err != nil {
		return nil, err
	}

	cert, err := keyPairToTLS(kp)
	if err != nil {
		return nil, err
	}

	cas := [][]byte{cl.IssuingCA().Crt}
	for _, a := range cl.AcceptedCAs() {
		cas = append(cas, a.Crt)
	}

	pool, err := certPool(cas...)
	if err != nil {
		return nil, err
	}

	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

type kubeStatus struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   map[string]any `json:"metadata"`
	Status     string         `json:"status"`
	Message    string         `json:"message"`
	Reason     string         `json:"reason"`
	Details    map[string]any `json:"details,omitempty"`
	Code       int            `json:"code"`
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string, details map[string]any) {
	writeJSON(w, code, kubeStatus{
		Kind: "Status", APIVersion: "v1", Metadata: map[string]any{},
		Status: "Failure", Message: msg, Reason: reason, Details: details, Code: code,
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v) //nolint:errcheck,errchkjson
}

// user is the authenticated client certificate's identity.
type user struct {
	name   string
	groups []string
}

func requestUser(r *http.Request) (user, bool) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return user{}, false
	}

	c := r.TLS.PeerCertificates[0]

	return user{name: c.Subject.CommonName, groups: c.Subject.Organization}, true
}

func (k *kubeServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")

	switch path {
	case "/readyz", "/livez", "/healthz":
		k.health(w, path)

		return
	case "/version":
		k.version(w)

		return
	}

	u, ok := requestUser(r)
	if !ok {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized", nil)

		return
	}

	switch {
	case path == "/api" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []map[string]string{{"clientCIDR": "0.0.0.0/0", "serverAddress": k.addr.String()}},
		})
	case path == "/apis" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"kind": "APIGroupList", "apiVersion": "v1",
			"groups": []map[string]any{{
				"name":             "certificates.k8s.io",
				"versions":         []map[string]string{{"groupVersion": "certificates.k8s.io/v1", "version": "v1"}},
				"preferredVersion": map[string]string{"groupVersion": "certificates.k8s.io/v1", "version": "v1"},
			}},
		})
	case path == "/api/v1/nodes" && r.Method == http.MethodGet:
		if !k.allowed(w, u, "list", "nodes", "") {
			return
		}

		k.listNodes(w)
	case strings.HasPrefix(path, "/api/v1/nodes/") && !strings.Contains(strings.TrimPrefix(path, "/api/v1/nodes/"), "/"):
		name := strings.TrimPrefix(path, "/api/v1/nodes/")

		switch r.Method {
		case http.MethodGet:
			if k.allowed(w, u, "get", "nodes", "") {
				k.getNode(w, name)
			}
		case http.MethodDelete:
			if k.allowed(w, u, "delete", "nodes", "") {
				k.deleteNode(w, name)
			}
		default:
			writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "the server does not allow this method on the requested resource", nil)
		}
	case path == "/apis/certificates.k8s.io/v1/certificatesigningrequests" && r.Method == http.MethodGet:
		if k.allowed(w, u, "list", "certificatesigningrequests", "certificates.k8s.io") {
			k.listCSRs(w)
		}
	default:
		writeStatus(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource", nil)
	}
}

// allowed is RBAC reduced to what the lab needs: system:masters may do
// anything; others are refused with kube-apiserver's wording.
func (k *kubeServer) allowed(w http.ResponseWriter, u user, verb, resource, group string) bool {
	if slices.Contains(u.groups, "system:masters") {
		return true
	}

	writeStatus(w, http.StatusForbidden, "Forbidden",
		fmt.Sprintf("%s is forbidden: User %q cannot %s resource %q in API group %q at the cluster scope", resource, u.name, verb, resource, group),
		map[string]any{"kind": resource})

	return false
}

func (k *kubeServer) health(w http.ResponseWriter, path string) {
	s := k.sim

	s.mu.Lock()
	node := k.cluster.serving[k.addr]
	ok := node != nil && node.etcdCluster != nil && node.etcdCluster.hasQuorum()
	s.mu.Unlock()

	if ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "ok")

		return
	}

	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	fmt.Fprintf(w, "[-]etcd failed: reason withheld\n%s check failed\n", strings.TrimPrefix(path, "/"))
}

func (k *kubeServer) version(w http.ResponseWriter) {
	s := k.sim

	s.mu.Lock()
	node := k.cluster.serving[k.addr]

	v := ""
	if node != nil && node.active != nil {
		v = imageTag(node.active.Cluster().APIServer().Image())
	}
	s.mu.Unlock()

	major, minor, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")

	writeJSON(w, http.StatusOK, map[string]string{
		"major":        major,
		"minor":        minor,
		"gitVersion":   v,
		"gitCommit":    "0000000000000000000000000000000000000000",
		"gitTreeState": "clean",
		"buildDate":    "2025-01-01T00:00:00Z",
		"goVersion":    "go1.24.0",
		"compiler":     "gc",
		"platform":     "linux/amd64",
	})
}

// imageTag returns the tag of an image reference ("" without one).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")

	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")

	if colon <= slash {
		return ""
	}

	return ref[colon+1:]
}

func (k *kubeServer) listNodes(w http.ResponseWriter) {
	s := k.sim

	s.mu.Lock()
	items := make([]kubeNodeJSON, 0, len(k.cluster.kubeNodes))

	for _, kn := range k.cluster.kubeNodes {
		items = append(items, s.nodeJSON(k.cluster, kn))
	}
	s.mu.Unlock()

	slices.SortFunc(items, func(a, b kubeNodeJSON) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })

	writeJSON(w, http.StatusOK, map[string]any{
		"kind": "NodeList", "apiVersion": "v1",
		"metadata": map[string]any{"resourceVersion": fmt.Sprint(time.Now().UnixNano())},
		"items":    items,
	})
}

func (k *kubeServer) getNode(w http.ResponseWriter, name string) {
	s := k.sim

	s.mu.Lock()
	kn := k.cluster.kubeNodes[name]

	var item kubeNodeJSON
	if kn != nil {
		item = s.nodeJSON(k.cluster, kn)
	}
	s.mu.Unlock()

	if kn == nil {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("nodes %q not found", name), map[string]any{"name": name, "kind": "nodes"})

		return
	}

	writeJSON(w, http.StatusOK, item)
}

func (k *kubeServer) deleteNode(w http.ResponseWriter, name string) {
	s := k.sim

	s.mu.Lock()
	kn := k.cluster.kubeNodes[name]
	delete(k.cluster.kubeNodes, name)
	s.mu.Unlock()

	if kn == nil {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("nodes %q not found", name), map[string]any{"name": name, "kind": "nodes"})

		return
	}

	writeJSON(w, http.StatusOK, map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success",
		"details": map[string]any{"name": name, "kind": "nodes", "uid": kn.uid},
	})
}

func (k *kubeServer) listCSRs(w http.ResponseWriter) {
	s := k.sim

	type csrJSON struct {
		Metadata map[string]any `json:"metadata"`
		Spec     map[string]any `json:"spec"`
		Status   map[string]any `json:"status"`
	}

	s.mu.Lock()

	var items []csrJSON

	for _, kn := range k.cluster.kubeNodes {
		if kn.csr == nil {
			continue
		}

		status := map[string]any{}
		if kn.csr.approved {
			status["conditions"] = []map[string]any{{
				"type": "Approved", "status": "True", "reason": "AutoApproved",
				"message":            "Auto approving kubelet serving certificate after SubjectAccessReview.",
				"lastUpdateTime":     kn.csr.createdAt.UTC().Format(time.RFC3339),
				"lastTransitionTime": kn.csr.createdAt.UTC().Format(time.RFC3339),
			}}
			status["certificate"] = ""
		}

		items = append(items, csrJSON{
			Metadata: map[string]any{"name": kn.csr.name, "creationTimestamp": kn.csr.createdAt.UTC().Format(time.RFC3339)},
			Spec: map[string]any{
				"signerName": "kubernetes.io/kubelet-serving",
				"username":   "system:node:" + kn.name,
				"groups":     []string{"system:nodes", "system:authenticated"},
				"usages":     []string{"digital signature", "server auth"},
			},
			Status: status,
		})
	}
	s.mu.Unlock()

	slices.SortFunc(items, func(a, b csrJSON) int {
		return strings.Compare(a.Metadata["name"].(string), b.Metadata["name"].(string))
	})

	writeJSON(w, http.StatusOK, map[string]any{
		"kind": "CertificateSigningRequestList", "apiVersion": "certificates.k8s.io/v1",
		"metadata": map[string]any{}, "items": items,
	})
}
