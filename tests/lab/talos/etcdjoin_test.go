package talos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// fakeEtcd is the membership part of one etcd member's gateway: list and
// add (as a learner, refused with etcd's "Peer URLs already exists" for a
// peer URL a member has, server/etcdserver/api/membership/cluster.go
// ValidateConfigurationChange). With loseAdd, the first add is applied
// and its reply lost (the connection closes), as when the joining node
// gives up on its attempt timeout.
type fakeEtcd struct {
	mu      sync.Mutex
	members []gwMember
	loseAdd bool
}

func (f *fakeEtcd) serve(t *testing.T) string {
	t.Helper()

	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()

		switch r.URL.Path {
		case "/v3/cluster/member/list":
			writeJSON(t, w, map[string]any{"members": f.members})
		case "/v3/cluster/member/add":
			var req struct {
				PeerURLs []string `json:"peerURLs"`
			}

			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				t.Errorf("member add: %v", err)
			}

			for _, m := range f.members {
				if slices.Equal(m.PeerURLs, req.PeerURLs) {
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, `{"code":9,"message":"etcdserver: Peer URLs already exists"}`)

					return
				}
			}

			m := gwMember{ID: uint64Str(100 + len(f.members)), PeerURLs: req.PeerURLs, IsLearner: true}
			f.members = append(f.members, m)

			if f.loseAdd {
				f.loseAdd = false

				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					err = conn.Close()
				}

				if err != nil {
					t.Errorf("losing the reply: %v", err)
				}

				return
			}

			writeJSON(t, w, map[string]any{"member": m, "members": f.members})
		default:
			t.Errorf("unexpected call %s", r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)

	return srv.URL
}

// writeJSON answers as the gateway does (protojson: uint64 as strings).
func writeJSON(t *testing.T, w http.ResponseWriter, v map[string]any) {
	t.Helper()

	pj := func(m gwMember) map[string]any {
		return map[string]any{"ID": fmt.Sprint(uint64(m.ID)), "name": m.Name, "peerURLs": m.PeerURLs, "isLearner": m.IsLearner}
	}

	out := map[string]any{}

	for k, x := range v {
		switch x := x.(type) {
		case gwMember:
			out[k] = pj(x)
		case []gwMember:
			l := make([]map[string]any, 0, len(x))
			for _, m := range x {
				l = append(l, pj(m))
			}

			out[k] = l
		}
	}

	if err := json.NewEncoder(w).Encode(out); err != nil {
		t.Errorf("answering: %v", err)
	}
}

func noRemove(t *testing.T) func(context.Context, uint64) error {
	return func(_ context.Context, id uint64) error {
		t.Errorf("removed member %d: no member has this node's name", id)

		return nil
	}
}

// A join whose add etcd applied but whose reply was lost meets etcd's
// "Peer URLs already exists" on its next attempt: Talos 1.14 takes the
// unnamed learner with its peer URL as itself; 1.13 retries that refusal
// (and never joins).
func TestJoinReusesTheLearnerOfALostAdd(t *testing.T) {
	t.Parallel()

	const peer = "https://10.5.0.3:2380"

	for _, tc := range []struct {
		version string
		reuse   bool
	}{{"v1.14.1", true}, {"v1.13.9", false}} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()

			f := &fakeEtcd{members: []gwMember{{ID: 1, Name: "cp1", PeerURLs: []string{"https://10.5.0.2:2380"}}}, loseAdd: true}
			urls := []string{f.serve(t)}
			g := testGateway(t)

			_, _, err := g.addMember(context.Background(), urls, "cp2", peer, reusesUnnamedLearner(tc.version), noRemove(t))
			if !errors.Is(err, errEtcdGateway) {
				t.Fatalf("first add = %v, want the lost reply (%v)", err, errEtcdGateway)
			}

			members, id, err := g.addMember(context.Background(), urls, "cp2", peer, reusesUnnamedLearner(tc.version), noRemove(t))
			if !tc.reuse {
				if !errors.Is(err, errEtcdPeerURLExist) {
					t.Fatalf("second add = %v, want etcd's %v", err, errEtcdPeerURLExist)
				}

				return
			}

			if err != nil || id != 101 || len(members) != 2 {
				t.Fatalf("second add = learner %d of %+v, %v; want learner 101 of both members", id, members, err)
			}
		})
	}
}

// Only an unnamed learner is taken: a started member with that peer URL
// is another node's, and Talos 1.14 refuses to join as it.
func TestJoinDoesNotReuseAStartedMember(t *testing.T) {
	t.Parallel()

	const peer = "https://10.5.0.3:2380"

	f := &fakeEtcd{members: []gwMember{{ID: 1, Name: "cp1", PeerURLs: []string{peer}}}}

	_, _, err := testGateway(t).addMember(context.Background(), []string{f.serve(t)}, "cp2", peer, true, noRemove(t))
	if !errors.Is(err, errEtcdPeerURLExist) || err.Error() == errEtcdPeerURLExist.Error() {
		t.Fatalf("add = %v, want Talos's 'but is not a learner' around etcd's %v", err, errEtcdPeerURLExist)
	}
}
