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
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
)

// etcdGateway is an etcd client for the real members (etcdmember.go):
// etcd's gRPC gateway (JSON over the client URL, on by default:
// --enable-grpc-gateway), with a client certificate from the cluster's etcd
// CA, as Talos's etcd client has one (its "etcd admin" certificate). The
// lab needs no etcd client library; the calls are etcd's own RPCs
// (api/etcdserverpb/rpc.proto: /v3/cluster/member/*, /v3/maintenance/*).
type etcdGateway struct{ hc *http.Client }

func newEtcdGateway(cfg config.Provider) (*etcdGateway, error) {
	kp, err := etcdKeyPair(cfg, "talos-etcd-admin", nil, "")
	if err != nil {
		return nil, err
	}

	cert, err := tls.X509KeyPair(kp.Crt, kp.Key)
	if err != nil {
		return nil, err
	}

	pool, err := certPool(cfg.Cluster().Etcd().CA().Crt)
	if err != nil {
		return nil, err
	}

	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
	}

	return &etcdGateway{hc: &http.Client{Transport: tr}}, nil
}

func (g *etcdGateway) close() { g.hc.CloseIdleConnections() }

// errEtcdGateway is a member that did not answer (nothing listens, or it
// hangs): the client tries the next endpoint.
var errEtcdGateway = errors.New("etcd member unreachable")

// post sends one call to the member at url. requireLeader is
// clientv3.WithRequireLeader (the "hasleader" metadata), which Talos sets on
// its membership calls: without a leader etcd answers "no leader" at once
// instead of waiting. The caller closes the body.
func (g *etcdGateway) post(ctx context.Context, url, path string, body any, requireLeader bool) (*http.Response, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}

	if requireLeader {
		req.Header.Set("Grpc-Metadata-hasleader", "true")
	}

	resp, err := g.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errEtcdGateway, url, err)
	}

	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close() //nolint:errcheck

		// The gateway's error is the gRPC status as JSON
		// (grpc-gateway v2 DefaultHTTPErrorHandler): {"code":14,"message":...}.
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}

		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(b, &e) != nil || e.Message == "" {
			return nil, fmt.Errorf("etcd %s: HTTP %d: %s", path, resp.StatusCode, b)
		}

		return nil, &etcdRPCError{code: e.Code, err: etcdError(e.Message)}
	}

	return resp, nil
}

// call is one unary call to one member, as the gateway makes it: no
// retry. It is bounded (etcdCallBound) only so that a hung member cannot
// hold the lab; etcd itself always answers sooner.
func (g *etcdGateway) call(ctx context.Context, url, path string, body, out any, requireLeader bool) error {
	ctx, cancel := context.WithTimeout(ctx, etcdCallBound)
	defer cancel()

	resp, err := g.post(ctx, url, path, body, requireLeader)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck

	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}

// etcdError turns etcd's message back into the lab's error values
// (go.etcd.io/etcd/api/v3/v3rpc/rpctypes), so callers test them with
// errors.Is.
func etcdError(msg string) error {
	for _, e := range []error{
		errEtcdNotEnoughStarted, errEtcdUnhealthy, errEtcdNoLeader, errEtcdMemberNotFound, errEtcdPeerURLExist,
		errEtcdLearnerNotReady, errEtcdTooManyLearners, errEtcdLearner,
	} {
		if msg == e.Error() {
			return e
		}
	}

	return errors.New(msg)
}

// More of etcd v3.6's errors (rpctypes): a learner that has not caught up
// cannot be promoted; --max-learners (1) bounds the learners.
var (
	errEtcdLearnerNotReady = errors.New("etcdserver: can only promote a learner member which is in sync with leader")
	errEtcdTooManyLearners = errors.New("etcdserver: too many learner members in cluster")
	errEtcdLearner         = errors.New("etcdserver: rpc not supported for learner")
)

// gwMember is a member in a gateway answer (protojson: uint64 as strings).
type gwMember struct {
	ID         uint64Str `json:"ID"`
	Name       string    `json:"name"`
	PeerURLs   []string  `json:"peerURLs"`
	ClientURLs []string  `json:"clientURLs"`
	IsLearner  bool      `json:"isLearner"`
}

type gwHeader struct {
	ClusterID uint64Str `json:"cluster_id"`
	MemberID  uint64Str `json:"member_id"`
}

type gwStatus struct {
	Header           gwHeader  `json:"header"`
	Version          string    `json:"version"`
	StorageVersion   string    `json:"storageVersion"`
	DBSize           int64Str  `json:"dbSize"`
	DBSizeInUse      int64Str  `json:"dbSizeInUse"`
	Leader           uint64Str `json:"leader"`
	RaftIndex        uint64Str `json:"raftIndex"`
	RaftTerm         uint64Str `json:"raftTerm"`
	RaftAppliedIndex uint64Str `json:"raftAppliedIndex"`
	Errors           []string  `json:"errors"`
	IsLearner        bool      `json:"isLearner"`
}

type gwAlarm struct {
	MemberID uint64Str `json:"memberID"`
	Alarm    string    `json:"alarm"`
}

// uint64Str reads protojson's uint64 (a string, or absent: zero).
type uint64Str uint64

func (u *uint64Str) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseUint(strings.Trim(string(b), `"`), 10, 64)
	*u = uint64Str(v)

	return err
}

// int64Str reads protojson's int64 (a string, or absent).
type int64Str int64

func (v *int64Str) UnmarshalJSON(b []byte) error {
	var u uint64Str
	if err := u.UnmarshalJSON(b); err != nil {
		return err
	}

	*v = int64Str(u)

	return nil
}

func (g *etcdGateway) memberList(ctx context.Context, urls []string) ([]gwMember, error) {
	var out struct {
		Members []gwMember `json:"members"`
	}

	return out.Members, g.callAny(ctx, urls, "/v3/cluster/member/list", map[string]any{"linearizable": true}, &out)
}

func (g *etcdGateway) status(ctx context.Context, url string) (gwStatus, error) {
	var st gwStatus

	return st, g.invoke(ctx, []string{url}, "/v3/maintenance/status", struct{}{}, &st, false)
}

// alarms is Maintenance.Alarm: GET lists, ACTIVATE raises, DEACTIVATE
// clears one member's alarm. Without require-leader, as Talos calls it
// (v1.14.0-rc.1 v1alpha1_server.go EtcdAlarmList, EtcdAlarmDisarm:
// NewLocalClient, no WithRequireLeader): etcd puts every action through
// raft (server v3.7.1 v3_server.go Alarm), so without quorum it answers
// "request timed out" after its ReqTimeout, which clientv3 repeats until
// the caller's deadline, instead of "no leader" at once.
func (g *etcdGateway) alarm(ctx context.Context, url, action string, a EtcdAlarm) ([]EtcdAlarm, error) {
	var out struct {
		Alarms []gwAlarm `json:"alarms"`
	}

	body := map[string]any{"action": action, "memberID": fmt.Sprint(a.MemberID), "alarm": a.Alarm}
	if a.Alarm == "" {
		body["alarm"] = "NONE"
	}

	if err := g.invoke(ctx, []string{url}, "/v3/maintenance/alarm", body, &out, false); err != nil {
		return nil, err
	}

	res := make([]EtcdAlarm, 0, len(out.Alarms))

	for _, x := range out.Alarms {
		if x.Alarm == "" {
			x.Alarm = "NONE"
		}

		res = append(res, EtcdAlarm{MemberID: uint64(x.MemberID), Alarm: strings.ToUpper(x.Alarm)})
	}

	return res, nil
}
