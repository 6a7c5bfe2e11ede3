package talos

import (
	"bufio"
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/siderolabs/crypto/x509"
)

// kubeletAPI is a node's kubelet API on <node address>:10250 (the Node's
// daemonEndpoints), which the apiserver proxies `kubectl logs` to
// (pkg/kubelet/server/server.go): it authenticates the caller's client
// certificate against the cluster CA (the kubelet's --client-ca-file; the
// apiserver presents apiserver-kubelet-client, system:masters, so the
// kubelet's authorization webhook would allow it) and serves
// /containerLogs. The containers do not run, so their logs are one line
// saying so; kube-apiserver's are the real apiserver's output. exec,
// attach and port-forward are answered as for containers the runtime does
// not run (kubeletapi_stream.go); the stats endpoints are not simulated (404).
type kubeletAPI struct {
	key    string // node name, address and boot: a new boot is a new server
	srv    *http.Server
	logs   func(ns, pod, container string) []logLine
	podUID func(ns, pod string) (string, bool)
}

// logLine is one line of a container's log with its time.
type logLine struct {
	at   time.Time
	text string
}

const kubeletPort = 10250

// syncKubeletAPIs runs one kubelet API per live kubelet (agent goroutine).
func (a *kubeAgent) syncKubeletAPIs(views []kubeletView) {
	want := map[string]kubeletView{}

	for _, v := range views {
		if v.live && v.addr != "" {
			want[v.name] = v
		}
	}

	for name, k := range a.kubeletAPIs {
		v, ok := want[name]
		if !ok || k.key != kubeletKey(v) {
			k.stop()
			delete(a.kubeletAPIs, name)
		}
	}

	for name, v := range want {
		if a.kubeletAPIs[name] != nil {
			continue
		}

		k, err := a.startKubeletAPI(v)
		if err != nil {
			a.logErr("kubelet API of "+name, err)

			continue
		}

		a.kubeletAPIs[name] = k
	}
}

func kubeletKey(v kubeletView) string { return v.name + "|" + v.addr + "|" + v.boot.String() }

func (a *kubeAgent) stopKubeletAPIs() {
	for name, k := range a.kubeletAPIs {
		k.stop()
		delete(a.kubeletAPIs, name)
	}
}

func (a *kubeAgent) startKubeletAPI(v kubeletView) (*kubeletAPI, error) {
	ip, err := netip.ParseAddr(v.addr)
	if err != nil {
		return nil, err
	}

	// The kubelet's serving certificate: with rotate-server-certificates
	// the one its CSR got from the cluster CA; the lab uses that in both
	// cases (without it the kubelet's is self-signed; the apiserver checks
	// neither: Talos sets no --kubelet-certificate-authority).
	kp, err := x509.NewKeyPair(a.pki.ca,
		x509.CommonName("system:node:"+v.name),
		x509.Organization("system:nodes"),
		x509.IPAddresses([]net.IP{ip.AsSlice()}),
		x509.DNSNames([]string{v.name}),
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

	pool, err := certPool(a.pki.cfg.Cluster().IssuingCA().Crt)
	if err != nil {
		return nil, err
	}

	l, err := net.Listen("tcp", net.JoinHostPort(v.addr, strconv.Itoa(kubeletPort)))
	if err != nil {
		return nil, err
	}

	k := &kubeletAPI{key: kubeletKey(v), logs: a.containerLogs(v, a.pki), podUID: a.podsOfNode(v, a.pki)}
	k.srv = &http.Server{
		Handler:           k,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientCAs:    pool,
			ClientAuth:   tls.VerifyClientCertIfGiven,
			MinVersion:   tls.VersionTLS12,
		},
	}

	go k.srv.ServeTLS(l, "", "") //nolint:errcheck // ends with stop

	return k, nil
}

func (k *kubeletAPI) stop() { k.srv.Close() } //nolint:errcheck

func (k *kubeletAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)

		return
	}

	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if route, ok := parseStreamingRoute(parts); ok && (r.Method == http.MethodGet || r.Method == http.MethodPost) {
		k.serveStreaming(w, r, route)

		return
	}

	if r.Method != http.MethodGet || len(parts) != 4 || parts[0] != "containerLogs" {
		http.NotFound(w, r)

		return
	}

	q := r.URL.Query()
	lines := k.logs(parts[1], parts[2], parts[3])

	if s, err := strconv.Atoi(q.Get("sinceSeconds")); err == nil {
		since := time.Now().Add(-time.Duration(s) * time.Second)

		for len(lines) > 0 && lines[0].at.Before(since) {
			lines = lines[1:]
		}
	}

	if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n >= 0 && n < len(lines) {
		lines = lines[len(lines)-n:]
	}

	limit := -1
	if n, err := strconv.Atoi(q.Get("limitBytes")); err == nil {
		limit = n
	}

	w.Header().Set("Content-Type", "text/plain")

	bw := bufio.NewWriter(w)

	for _, l := range lines {
		line := l.text + "\n"
		if q.Get("timestamps") == "true" {
			line = l.at.UTC().Format(time.RFC3339Nano) + " " + line
		}

		if limit >= 0 {
			if len(line) > limit {
				line = line[:limit]
			}

			limit -= len(line)
		}

		bw.WriteString(line) //nolint:errcheck

		if limit == 0 {
			break
		}
	}

	bw.Flush() //nolint:errcheck

	// follow: nothing more will come; hold the stream until the client
	// (or the kubelet) ends it, as a running container's log does.
	if q.Get("follow") == "true" && limit != 0 {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}

		<-r.Context().Done()
	}
}

// containerLogs returns the log of one container of a pod on node v:
// the real apiserver's output for the kube-apiserver mirror pod, one line
// naming the container otherwise.
func (a *kubeAgent) containerLogs(v kubeletView, pki *kubePKI) func(ns, pod, container string) []logLine {
	kcp, node, boot := a.kcp, v.name, v.boot
	c := pki.client(a.apiAddr, "system:node:"+node, "system:nodes")

	return func(ns, pod, container string) []logLine {
		if ns == "kube-system" && pod == "kube-apiserver-"+node && container == "kube-apiserver" {
			if out := kcp.apiServerOutput(); out != "" {
				var lines []logLine

				for line := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
					lines = append(lines, logLine{at: klogTime(line, boot), text: line})
				}

				return lines
			}
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()

		started, image := boot, ""

		var p obj
		if err := c.do(ctx, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/"+pod, "", nil, &p); err == nil {
			if t, err := time.Parse(time.RFC3339, fieldString(p, "status", "startTime")); err == nil {
				started = t
			}

			containers, _ := field(p, "spec", "containers").([]any)
			for _, x := range containers {
				if m, _ := x.(map[string]any); m["name"] == container {
					image, _ = m["image"].(string)
				}
			}
		}

		return []logLine{{at: started, text: fmt.Sprintf("lab: container %q (%s) of pod %s/%s started; the lab simulates the pod and runs no process, so this is its only log line", container, image, ns, pod)}}
	}
}

// klogTime is the time of a klog line ("I1128 05:40:00.123456 ..."), in
// the year of ref; ref when the line has none.
func klogTime(line string, ref time.Time) time.Time {
	if len(line) < 21 || !strings.ContainsRune("IWEF", rune(line[0])) {
		return ref
	}

	t, err := time.Parse("0102 15:04:05.000000", line[1:21])
	if err != nil {
		return ref
	}

	return t.AddDate(ref.Year(), 0, 0)
}

// apiServerOutput is the end of the serving kube-apiserver's output.
func (k *kubeControlPlane) apiServerOutput() string {
	k.mu.Lock()
	p := k.apiProc
	k.mu.Unlock()

	if p == nil {
		return ""
	}

	return p.out.String()
}
