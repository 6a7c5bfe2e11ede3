package talos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// fakeGateway is one member's gRPC gateway answering from answer (the
// request's number, from 1); it counts the requests and fails the test
// when a call lacks the require-leader metadata it expects.
func fakeGateway(t *testing.T, wantLeader bool, answer func(n int64) (int, string)) (string, *atomic.Int64) {
	t.Helper()

	var n atomic.Int64

	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Grpc-Metadata-hasleader") == "true"; got != wantLeader {
			t.Errorf("%s: require-leader metadata %v, want %v", r.URL.Path, got, wantLeader)
		}

		status, body := answer(n.Add(1))
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)

	return srv.URL, &n
}

// unavailable is the gateway's answer for one of etcd's Unavailable errors.
func unavailable(msg string) (int, string) {
	return http.StatusServiceUnavailable, fmt.Sprintf(`{"code":14,"message":%q,"details":[]}`, msg)
}

func testGateway(t *testing.T) *etcdGateway {
	t.Helper()

	hc := httptest.NewTLSServer(nil).Client() // trusts every httptest server's certificate

	return &etcdGateway{hc: hc}
}

// A read etcd could not serve in time ("request timed out", after its
// ReadIndex rounds) is asked again, as clientv3 does for MemberList: the
// member that has lost its leader meanwhile answers "no leader", which is
// what Talos returns.
func TestEtcdClientRepeatsReadsEtcdRefusedForNow(t *testing.T) {
	t.Parallel()

	url, n := fakeGateway(t, true, func(n int64) (int, string) {
		if n == 1 {
			return unavailable("etcdserver: request timed out")
		}

		return unavailable("etcdserver: no leader")
	})

	_, err := testGateway(t).memberList(context.Background(), []string{url})
	if !errors.Is(err, errEtcdNoLeader) {
		t.Fatalf("member list = %v, want etcd's %v", err, errEtcdNoLeader)
	}

	if n.Load() != etcdClientMaxAttempts {
		t.Fatalf("%d calls, want clientv3's %d attempts", n.Load(), etcdClientMaxAttempts)
	}
}

// A member without a leader passes the retry to the next endpoint, which
// answers.
func TestEtcdClientRetryMovesToTheNextMember(t *testing.T) {
	t.Parallel()

	minority, _ := fakeGateway(t, true, func(int64) (int, string) { return unavailable("etcdserver: no leader") })
	majority, _ := fakeGateway(t, true, func(int64) (int, string) {
		return http.StatusOK, `{"members":[{"ID":"7","name":"cp1"}]}`
	})

	list, err := testGateway(t).memberList(context.Background(), []string{minority, majority})
	if err != nil || len(list) != 1 || list[0].Name != "cp1" {
		t.Fatalf("member list = %+v, %v", list, err)
	}
}

// Writes are not repeated after etcd's answer (write at most once), and
// neither is a read etcd refused for good.
func TestEtcdClientDoesNotRepeatWritesNorFinalAnswers(t *testing.T) {
	t.Parallel()

	url, n := fakeGateway(t, true, func(int64) (int, string) { return unavailable("etcdserver: unhealthy cluster") })

	err := testGateway(t).callAny(context.Background(), []string{url}, "/v3/cluster/member/remove", map[string]any{"ID": "7"}, &struct{}{})
	if !errors.Is(err, errEtcdUnhealthy) || n.Load() != 1 {
		t.Fatalf("member remove = %v after %d calls, want etcd's %v after one", err, n.Load(), errEtcdUnhealthy)
	}

	url, n = fakeGateway(t, false, func(int64) (int, string) {
		return http.StatusNotFound, `{"code":5,"message":"etcdserver: member not found"}`
	})

	_, err = testGateway(t).status(context.Background(), url)
	if !errors.Is(err, errEtcdMemberNotFound) || n.Load() != 1 {
		t.Fatalf("status = %v after %d calls, want etcd's %v after one", err, n.Load(), errEtcdMemberNotFound)
	}
}

// A caller that gives up ends the retries with its context's error.
func TestEtcdClientStopsWithTheCaller(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithCancel(context.Background())

	url, n := fakeGateway(t, true, func(n int64) (int, string) {
		if n == 3 {
			cancel()
		}

		return unavailable("etcdserver: no leader")
	})

	_, err := testGateway(t).memberList(ctx, []string{url})
	if !errors.Is(err, context.Canceled) || n.Load() != 3 {
		t.Fatalf("member list = %v after %d calls, want the caller's cancellation after 3", err, n.Load())
	}
}

// The lab's bound must outlast etcd's slowest answer (two ReadIndex rounds
// of ReqTimeout each): the old bound of exactly that cut etcd's answer off.
func TestEtcdCallBoundOutlastsEtcd(t *testing.T) {
	t.Parallel()

	if etcdReqTimeout != 15*time.Second || etcdCallBound <= 2*etcdReqTimeout {
		t.Fatalf("ReqTimeout %v, bound %v: the bound must exceed two ReqTimeouts", etcdReqTimeout, etcdCallBound)
	}
}

// cancelOnClose cancels the caller's context once the answer's body has
// been read and closed: the reply arrived before the caller gave up.
type cancelOnClose struct {
	base   http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelOnClose) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		resp.Body = closeHook{resp.Body, c.cancel}
	}

	return resp, err
}

type closeHook struct {
	io.ReadCloser
	after func()
}

func (h closeHook) Close() error {
	err := h.ReadCloser.Close()
	h.after()

	return err
}

// An answer that arrived stands when the caller's context ends after it,
// as clientv3 returns the reply: the add was applied, and reporting the
// caller's cancellation would have the join add the learner again.
func TestEtcdClientKeepsAnAnswerTheCallerOutlived(t *testing.T) {
	t.Parallel()

	url, n := fakeGateway(t, true, func(int64) (int, string) {
		return http.StatusOK, `{"member":{"ID":"7","peerURLs":["https://10.5.0.2:2380"],"isLearner":true}}`
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	g := testGateway(t)
	g.hc.Transport = cancelOnClose{base: g.hc.Transport, cancel: cancel}

	var added struct {
		Member gwMember `json:"member"`
	}

	err := g.callAny(ctx, []string{url}, "/v3/cluster/member/add", map[string]any{"peerURLs": []string{"https://10.5.0.2:2380"}, "isLearner": true}, &added)
	if err != nil || added.Member.ID != 7 || n.Load() != 1 {
		t.Fatalf("member add = member %d, %v after %d calls, want member 7 and no error after one", added.Member.ID, err, n.Load())
	}

	if ctx.Err() == nil {
		t.Fatal("the transport did not cancel the caller's context: the test proves nothing")
	}
}

// Without quorum, Talos's alarm list and disarm wait for the caller's
// deadline: they are sent without require-leader, so etcd does not refuse
// them with "no leader" (server v3.7.1 api/v3rpc/interceptor.go
// newUnaryInterceptor refuses only calls with the hasleader metadata) but
// proposes them to raft, which answers nothing before its ReqTimeout.
func TestEtcdAlarmsWithoutQuorumWaitForTheCaller(t *testing.T) {
	t.Parallel()

	for _, action := range []string{"GET", "DEACTIVATE"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()

			var n atomic.Int64

			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)

				if r.Header.Get("Grpc-Metadata-hasleader") == "true" {
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprint(w, `{"code":14,"message":"etcdserver: no leader"}`)

					return
				}

				// raft has no leader to commit the proposal: etcd answers
				// after its ReqTimeout, unless the caller gives up first (the
				// body read to its end lets the server see that).
				io.Copy(io.Discard, r.Body) //nolint:errcheck

				select {
				case <-r.Context().Done():
				case <-time.After(etcdReqTimeout):
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprint(w, `{"code":14,"message":"etcdserver: request timed out"}`)
				}
			}))
			t.Cleanup(srv.Close)

			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()

			_, err := testGateway(t).alarm(ctx, srv.URL, action, EtcdAlarm{})
			if !errors.Is(err, context.DeadlineExceeded) || n.Load() != 1 {
				t.Fatalf("alarm %s = %v after %d calls, want the caller's deadline during the first", action, err, n.Load())
			}
		})
	}
}
