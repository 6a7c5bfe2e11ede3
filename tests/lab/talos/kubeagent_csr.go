package talos

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	stdx509 "crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/siderolabs/crypto/x509"
)

// syncCSRs: a kubelet with rotate-server-certificates requests its serving
// certificate once per start (signer kubernetes.io/kubelet-serving, its
// node identity, its address and name); the kubelet serving cert approver
// (when the manifests run one) approves such requests, and
// kube-controller-manager's csrsigning signs approved ones with the cluster
// CA. Without an approver they stay Pending, as on a real cluster.
func (a *kubeAgent) syncCSRs(ctx context.Context, views []kubeletView, approver bool) {
	wanted := false

	for _, v := range views {
		wanted = wanted || v.servingCSR

		if v.live && v.servingCSR && !a.csrs[v.name].Equal(v.boot) {
			if err := a.requestServingCert(ctx, v); err == nil {
				a.csrs[v.name] = v.boot
			}
		}
	}

	if !wanted && len(a.csrs) == 0 {
		return // no kubelet requests serving certificates
	}

	var list struct {
		Items []obj `json:"items"`
	}

	if err := a.admin.do(ctx, http.MethodGet, "/apis/certificates.k8s.io/v1/certificatesigningrequests", "", nil, &list); err != nil {
		return
	}

	for _, csr := range list.Items {
		if fieldString(csr, "spec", "signerName") != "kubernetes.io/kubelet-serving" {
			continue
		}

		conds, _ := field(csr, "status", "conditions").([]any)
		path := "/apis/certificates.k8s.io/v1/certificatesigningrequests/" + url.PathEscape(fieldString(csr, "metadata", "name"))

		switch {
		case len(conds) == 0 && approver && strings.HasPrefix(fieldString(csr, "spec", "username"), "system:node:"):
			// alex1989hu/kubelet-serving-cert-approver: approve after its checks.
			now := rfc3339(time.Now())
			fieldMap(csr, "status")["conditions"] = []obj{{
				"type": "Approved", "status": "True", "reason": "AutoApproved",
				"message":        "Auto approving kubelet serving certificate after SubjectAccessReview.",
				"lastUpdateTime": now, "lastTransitionTime": now,
			}}
			a.admin.as("kubelet-serving-cert-approver").do(ctx, http.MethodPut, path+"/approval", "", csr, nil) //nolint:errcheck
		case approved(conds) && fieldString(csr, "status", "certificate") == "":
			cert, err := a.signServing(csr)
			if err != nil {
				continue
			}

			fieldMap(csr, "status")["certificate"] = base64.StdEncoding.EncodeToString(cert)
			a.admin.as("kube-controller-manager").do(ctx, http.MethodPut, path+"/status", "", csr, nil) //nolint:errcheck
		}
	}
}

func approved(conds []any) bool {
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Approved" && m["status"] == "True" {
			return true
		}
	}

	return false
}

// requestServingCert creates the kubelet's serving CSR
// (pkg/kubelet/certificate/kubelet.go NewKubeletServerCertificateManager).
func (a *kubeAgent) requestServingCert(ctx context.Context, v kubeletView) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}

	tmpl := &stdx509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "system:node:" + v.name, Organization: []string{"system:nodes"}},
		DNSNames: []string{v.name},
	}

	if ip := net.ParseIP(v.addr); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}

	der, err := stdx509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return err
	}

	csr := obj{
		"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
		"metadata": obj{"generateName": "csr-"},
		"spec": obj{
			"request":    base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})),
			"signerName": "kubernetes.io/kubelet-serving",
			"usages":     []string{"digital signature", "server auth"},
		},
	}

	return a.kubelet(v.name, v.version).do(ctx, http.MethodPost, "/apis/certificates.k8s.io/v1/certificatesigningrequests", "", csr, nil)
}

// signServing signs an approved serving CSR with the cluster CA, as
// kube-controller-manager's kubelet-serving signer does (one year).
func (a *kubeAgent) signServing(csr obj) ([]byte, error) {
	req, err := base64.StdEncoding.DecodeString(fieldString(csr, "spec", "request"))
	if err != nil {
		return nil, err
	}

	ca := a.pki.cfg.Cluster().IssuingCA()

	cert, err := x509.NewCertificateFromCSRBytes(ca.Crt, ca.Key, req,
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}),
	)
	if err != nil {
		return nil, err
	}

	return cert.X509CertificatePEM, nil
}
