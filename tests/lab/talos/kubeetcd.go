package talos

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// The cluster's real etcd (kubecp.go) answers the maintenance calls whose
// numbers the lab's etcd model cannot make up: status (database size, raft
// index and term) and defragmentation. It is asked through etcd's gRPC
// gateway (JSON over the client URL, on by default: --enable-grpc-gateway)
// with the apiserver's etcd client certificate, so the lab needs no etcd
// client library.

// realEtcdStatus is the part of etcd's Maintenance.Status the model lacks.
type realEtcdStatus struct {
	Version          string `json:"version"`
	StorageVersion   string `json:"storageVersion"`
	DBSize           string `json:"dbSize"` // int64 fields come as strings (protojson)
	DBSizeInUse      string `json:"dbSizeInUse"`
	RaftIndex        string `json:"raftIndex"`
	RaftTerm         string `json:"raftTerm"`
	RaftAppliedIndex string `json:"raftAppliedIndex"`
}

var errNoRealEtcd = errors.New("the cluster's etcd process does not run")

// etcdPost posts a request to the real etcd's gateway; the caller closes
// the answer's body.
func (k *kubeControlPlane) etcdPost(ctx context.Context, path string, body any) (*http.Response, error) {
	k.mu.Lock()
	url, pki := k.etcdURL, k.pki
	k.mu.Unlock()

	if url == "" || pki == nil {
		return nil, errNoRealEtcd
	}

	cert, err := tls.LoadX509KeyPair(pki.path("apiserver-etcd-client.crt"), pki.path("apiserver-etcd-client.key"))
	if err != nil {
		return nil, err
	}

	pool, err := certPool(pki.cfg.Cluster().Etcd().CA().Crt)
	if err != nil {
		return nil, err
	}

	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 5 * time.Second,
		DisableKeepAlives:   true,
	}

	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}

	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, err
	}

	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		resp.Body.Close() //nolint:errcheck

		return nil, fmt.Errorf("etcd %s: HTTP %d: %s", path, resp.StatusCode, b)
	}

	return resp, nil
}

// etcdCall is etcdPost of a unary call, bounded (etcd answers them at once).
func (k *kubeControlPlane) etcdCall(ctx context.Context, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	resp, err := k.etcdPost(ctx, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck

	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}

// realEtcdSnapshot streams the real keyspace's snapshot (Maintenance.Snapshot:
// the bbolt database followed by its sha256, as etcdctl saves it).
func (k *kubeControlPlane) realEtcdSnapshot(ctx context.Context, w io.Writer) error {
	resp, err := k.etcdPost(ctx, "/v3/maintenance/snapshot", struct{}{})
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck

	return copySnapshotStream(resp.Body, w)
}

func (k *kubeControlPlane) realEtcdStatus(ctx context.Context) (realEtcdStatus, error) {
	var st realEtcdStatus

	return st, k.etcdCall(ctx, "/v3/maintenance/status", struct{}{}, &st)
}

func (k *kubeControlPlane) realEtcdDefragment(ctx context.Context) error {
	var out struct{}

	return k.etcdCall(ctx, "/v3/maintenance/defragment", struct{}{}, &out)
}

func parseUint(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)

	return v
}
