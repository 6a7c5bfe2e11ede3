package talos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A real etcd cluster (the lab's etcd binary, .tools/bin/etcd-<version>)
// for comparing the lab's etcd model (etcd.go) with etcd itself. Members
// listen on plain HTTP on their own loopback address: membership, quorum
// and the reconfiguration checks do not depend on TLS. Calls go through
// etcd's gRPC gateway (JSON), as the lab's kubeetcd.go does.

type realEtcdMember struct {
	name string
	addr netip.Addr
	id   uint64
	p    *proc
}

func (m *realEtcdMember) peerURL() string   { return "http://" + joinPort(m.addr.String(), 2380) }
func (m *realEtcdMember) clientURL() string { return "http://" + joinPort(m.addr.String(), 2379) }

type realEtcdCluster struct {
	t       *testing.T
	bin     string
	dir     string
	host    func(int) netip.Addr
	next    int
	members map[string]*realEtcdMember
}

func newRealEtcdCluster(t *testing.T) *realEtcdCluster {
	t.Helper()

	rc := &realEtcdCluster{t: t, bin: kubeToolsT(t).Etcd, dir: t.TempDir(), host: addressBlock(), members: map[string]*realEtcdMember{}}

	t.Cleanup(func() {
		for _, m := range rc.members {
			m.p.stop(5 * time.Second)
		}
	})

	return rc
}

// member returns the member called name, with a fresh address if new.
func (rc *realEtcdCluster) member(name string) *realEtcdMember {
	if m := rc.members[name]; m != nil {
		return m
	}

	rc.next++
	m := &realEtcdMember{name: name, addr: rc.host(rc.next)}
	rc.members[name] = m

	return m
}

// run starts a member's process with Talos's cluster flags
// (services/etcd.go argsForControlPlane: new cluster of one at bootstrap,
// "existing" with the list from the add on a join), keeping its data dir.
func (rc *realEtcdCluster) run(m *realEtcdMember, state, initial string) {
	rc.t.Helper()

	p, err := startProc("etcd "+m.name, rc.bin,
		"--name="+m.name, "--data-dir="+filepath.Join(rc.dir, m.name),
		"--listen-client-urls="+m.clientURL(), "--advertise-client-urls="+m.clientURL(),
		"--listen-peer-urls="+m.peerURL(), "--initial-advertise-peer-urls="+m.peerURL(),
		"--initial-cluster="+initial, "--initial-cluster-state="+state,
		"--listen-metrics-urls=", "--log-level=warn", "--unsafe-no-fsync",
	)
	if err != nil {
		rc.t.Fatal(err)
	}

	m.p = p
}

// bootstrap starts the first member (Talos's Bootstrap call).
func (rc *realEtcdCluster) bootstrap(name string) *realEtcdMember {
	rc.t.Helper()

	m := rc.member(name)
	rc.run(m, "new", m.name+"="+m.peerURL())
	rc.waitHealth(m, true)

	var st struct{ Header struct{ MemberID uint64Str } }

	rc.must(rc.call(m, "/v3/maintenance/status", struct{}{}, &st))
	m.id = uint64(st.Header.MemberID)

	return m
}

// addLearner is Talos's addMember (services/etcd.go): MemberAddAsLearner
// through a running member, with the leader required.
func (rc *realEtcdCluster) addLearner(via *realEtcdMember, name string) (*realEtcdMember, string, error) {
	m := rc.member(name)

	var out struct {
		Member  realEtcdMemberJSON
		Members []realEtcdMemberJSON
	}

	if err := rc.call(via, "/v3/cluster/member/add", map[string]any{"peerURLs": []string{m.peerURL()}, "isLearner": true}, &out); err != nil {
		return m, "", err
	}

	m.id = uint64(out.Member.ID)

	var initial []string

	for _, o := range out.Members {
		n := o.Name
		if uint64(o.ID) == m.id {
			n = name
		}

		initial = append(initial, n+"="+o.PeerURLs[0])
	}

	return m, strings.Join(initial, ","), nil
}

// join adds name as a learner, starts it and promotes it, retrying while
// etcd says the learner is not ready yet (Talos's promoteMember retries
// for ten minutes).
func (rc *realEtcdCluster) join(via *realEtcdMember, name string) (*realEtcdMember, error) {
	rc.t.Helper()

	m, initial, err := rc.addLearner(via, name)
	if err != nil {
		return m, err
	}

	rc.run(m, "existing", initial)

	for {
		err := rc.call(via, "/v3/cluster/member/promote", map[string]any{"ID": strconv.FormatUint(m.id, 10)}, &struct{}{})
		if err == nil || !strings.Contains(err.Error(), "in sync with leader") { // ErrLearnerNotReady
			return m, err
		}

		time.Sleep(100 * time.Millisecond)
	}
}

func (rc *realEtcdCluster) remove(via *realEtcdMember, id uint64) error {
	return rc.call(via, "/v3/cluster/member/remove", map[string]any{"ID": strconv.FormatUint(id, 10)}, &struct{}{})
}

// stop ends a member's process as a node's shutdown does; its data stays.
func (rc *realEtcdCluster) stop(m *realEtcdMember) {
	m.p.stop(5 * time.Second)
}

// waitHealth waits until the member's /health says it has a leader (want)
// or has none: a leader that loses its majority steps down after an
// election timeout (raft CheckQuorum), not at once.
func (rc *realEtcdCluster) waitHealth(m *realEtcdMember, want bool) {
	rc.t.Helper()

	waitFor(rc.t, fmt.Sprintf("etcd %s healthy=%v", m.name, want), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()

		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.clientURL()+"/health", nil)

		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close() //nolint:errcheck

		var h struct{ Health string }

		return json.NewDecoder(resp.Body).Decode(&h) == nil && h.Health == strconv.FormatBool(want)
	})
}

// call posts to a member's gateway with the leader required, as Talos's
// client asks (clientv3.WithRequireLeader: the "hasleader" metadata); an
// etcd error comes back as its message.
func (rc *realEtcdCluster) call(m *realEtcdMember, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.clientURL()+path, bytes.NewReader(data))
	if err != nil {
		return err
	}

	req.Header.Set("Grpc-Metadata-hasleader", "true")

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck

	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}

	if resp.StatusCode != http.StatusOK {
		var e struct{ Message string }
		if json.Unmarshal(b, &e) == nil && e.Message != "" {
			return errors.New(e.Message)
		}

		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}

	return json.Unmarshal(b, out)
}

func (rc *realEtcdCluster) must(err error) {
	rc.t.Helper()

	if err != nil {
		rc.t.Fatal(err)
	}
}

type realEtcdMemberJSON struct {
	ID        uint64Str
	Name      string
	PeerURLs  []string
	IsLearner bool
}

// uint64Str reads a 64-bit integer as the gateway writes it (a string).
// sameAnswer fails unless the model and the real etcd both accepted a
// call, or both refused it with the same etcd error text.
func sameAnswer(t *testing.T, what string, model, real error) {
	t.Helper()

	switch {
	case model == nil && real == nil:
	case model == nil || real == nil || model.Error() != real.Error():
		t.Fatalf("%s: the lab's etcd model answers %v, a real etcd answers %v", what, model, real)
	}
}

func sameQuorum(t *testing.T, what string, model *etcdCluster, rc *realEtcdCluster, via *realEtcdMember) {
	t.Helper()

	rc.waitHealth(via, model.hasQuorum())
	t.Logf("%s: both say quorum=%v", what, model.hasQuorum())
}

// TestEtcdModelAgainstRealEtcd drives the lab's etcd model and a real etcd
// cluster through the membership operations the provider and Talos use
// (bootstrap, join as learner then promote, member removal, control planes
// stopping and starting) and checks that both accept and refuse the same
// operations with the same errors, and agree on the quorum after each step.
func TestEtcdModelAgainstRealEtcd(t *testing.T) {
	t.Parallel()

	rc := newRealEtcdCluster(t)
	model := newEtcdCluster()
	model.healthInterval = etcdHealthInterval

	ids := map[string]uint64{} // model member IDs by name
	ra := rc.bootstrap("a")
	model.members = []*etcdMember{{id: 1, name: "a", addr: ra.addr.String(), started: true, running: true, since: time.Now()}}
	ids["a"] = 1

	// Each join waits out etcd's HealthInterval after the last member
	// started: both refuse an add before ("unhealthy cluster"; Talos retries
	// every 3 s), and the edge itself is a race, not a rule to compare.
	join := func(name string) (*realEtcdMember, error) {
		t.Helper()

		time.Sleep(etcdHealthInterval + time.Second)

		m := rc.member(name)
		mm, merr := model.add(name, m.addr.String())

		rm, rerr := rc.join(ra, name)
		sameAnswer(t, "join "+name, merr, rerr)

		if mm != nil {
			ids[name] = mm.id
		}

		return rm, rerr
	}

	rb, err := join("b")
	if err != nil {
		t.Fatal(err)
	}

	rcm, err := join("c")
	if err != nil {
		t.Fatal(err)
	}

	sameQuorum(t, "3 members running", model, rc, ra)

	// A second member at a peer URL that is taken.
	_, _, rerr := rc.addLearner(ra, "b")
	_, merr := model.add("b", rb.addr.String())
	sameAnswer(t, "adding a member at b's peer URL", merr, rerr)

	// One of three stops (a control plane reboots or powers off).
	rc.stop(rcm)
	model.member(ids["c"]).running = false
	sameQuorum(t, "c stopped", model, rc, ra)

	// A control plane joins while c is down.
	_, err = join("d")
	if err == nil {
		t.Fatal("a join while c is down was accepted by both")
	}

	// Removing a running member while another one is down.
	sameAnswer(t, "removing running b while c is down", model.remove(ids["b"]), rc.remove(ra, rb.id))

	// Two of three down: the quorum is lost.
	rc.stop(rb)
	model.member(ids["b"]).running = false
	sameQuorum(t, "b and c stopped", model, rc, ra)

	sameAnswer(t, "removing stopped c without a leader", model.remove(ids["c"]), rc.remove(ra, rcm.id))

	// b comes back with its data: the quorum is back.
	rc.run(rb, "existing", "")
	model.member(ids["b"]).running, model.member(ids["b"]).since = true, time.Now()
	sameQuorum(t, "b started again", model, rc, ra)
	rc.waitHealth(rb, true)

	sameAnswer(t, "removing stopped c", model.remove(ids["c"]), rc.remove(ra, rcm.id))

	// All voting members run again (for longer than HealthInterval): a
	// join is accepted.
	rd, err := join("d")
	if err != nil {
		t.Fatal(err)
	}

	sameQuorum(t, "a, b and d running", model, rc, ra)

	// A running member leaves while all run (scale-down), once d has been
	// connected for HealthInterval (before, both refuse: d does not count
	// as active yet; TestEtcdHealthInterval).
	time.Sleep(etcdHealthInterval + time.Second)
	sameAnswer(t, "removing running b", model.remove(ids["b"]), rc.remove(ra, rb.id))
	rc.stop(rb)

	// Two members left: one stopping loses the quorum.
	rc.stop(rd)
	model.member(ids["d"]).running = false
	sameQuorum(t, "d stopped of a and d", model, rc, ra)
}
