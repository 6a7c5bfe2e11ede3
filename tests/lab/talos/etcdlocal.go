package talos

import (
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// etcdLocal stands in for the address a control plane's kube-apiserver
// reaches etcd on: Talos runs the apiserver static pod with
// --etcd-servers=https://127.0.0.1:2379, the node's own member
// (siderolabs/talos internal/app/machined/pkg/controllers/k8s/control_plane.go,
// APIServerConfigSpec.EtcdServers). The lab runs one apiserver for all the
// control planes, so it listens on one loopback port and joins each
// connection to the member of a control plane whose apiserver pod runs,
// byte for byte (TLS is end to end: the member's certificate names
// 127.0.0.1, as Talos's does), like etcd's own gateway, "a simple TCP
// proxy" that "does not terminate TLS connections"
// (https://etcd.io/docs/current/op-guide/gateway).
//
// The set of members changes as control planes join and leave without a
// restart of the apiserver, as on real nodes, where one more control plane
// is one more apiserver and the others keep theirs.
type etcdLocal struct {
	l net.Listener

	mu        sync.Mutex
	members   []string                                      // host:port of the members, in the order tried
	hasLeader func(ctx context.Context, member string) bool // nil: take the first that accepts
	conns     map[net.Conn]string                           // the apiserver's side -> its member
	closed    bool
	wg        sync.WaitGroup
}

func newEtcdLocal() (*etcdLocal, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}

	e := &etcdLocal{l: l, conns: map[net.Conn]string{}}

	e.wg.Add(1)

	go e.serve()

	return e, nil
}

// url is the apiserver's --etcd-servers.
func (e *etcdLocal) url() string { return "https://" + e.l.Addr().String() }

// setMembers replaces the members; a connection to one no longer among
// them ends (its node stopped, left or is paused: its apiserver is gone),
// and the apiserver's etcd client reconnects to one that is. hasLeader
// (nil: none) says whether a member knows a leader.
func (e *etcdLocal) setMembers(members []string, hasLeader func(ctx context.Context, member string) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()

	e.members = slices.Clone(members)
	e.hasLeader = hasLeader

	for c, m := range e.conns {
		if !slices.Contains(members, m) {
			c.Close() //nolint:errcheck
		}
	}
}

func (e *etcdLocal) close() {
	e.mu.Lock()
	e.closed = true

	for c := range e.conns {
		c.Close() //nolint:errcheck
	}
	e.mu.Unlock()

	e.l.Close() //nolint:errcheck
	e.wg.Wait()
}

func (e *etcdLocal) serve() {
	defer e.wg.Done()

	for {
		c, err := e.l.Accept()
		if err != nil {
			return
		}

		e.wg.Add(1)

		go func() {
			defer e.wg.Done()
			e.join(c)
		}()
	}
}

// join connects c to the first member that accepts, trying those that
// know a leader first; with none, c ends (the apiserver sees etcd
// unreachable, as with its node's member down). A member that lost its
// leader fails only its own node's apiserver on a real cluster, so the
// lab's one apiserver prefers another; it stays on a member that loses its
// leader later (README).
func (e *etcdLocal) join(c net.Conn) {
	defer c.Close() //nolint:errcheck

	e.mu.Lock()
	members, hasLeader := slices.Clone(e.members), e.hasLeader
	e.mu.Unlock()

	if hasLeader != nil {
		members = leadersFirst(members, hasLeader)
	}

	for _, m := range members {
		up, err := net.DialTimeout("tcp", m, 2*time.Second)
		if err != nil {
			continue
		}

		if e.track(c, m) {
			pipe(c, up)
			e.untrack(c)
		}

		up.Close() //nolint:errcheck

		return
	}
}

// leadersFirst orders members with those hasLeader says know a leader
// first, each part in its order; each question is bounded so that a hung
// member cannot hold the apiserver's connection.
func leadersFirst(members []string, hasLeader func(ctx context.Context, member string) bool) []string {
	var with, without []string

	for _, m := range members {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ok := hasLeader(ctx, m)

		cancel()

		if ok {
			with = append(with, m)
		} else {
			without = append(without, m)
		}
	}

	return append(with, without...)
}

// track registers c as joined to member m, unless m left meanwhile or the
// lab closes.
func (e *etcdLocal) track(c net.Conn, m string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()

	if e.closed || !slices.Contains(e.members, m) {
		return false
	}

	e.conns[c] = m

	return true
}

func (e *etcdLocal) untrack(c net.Conn) {
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
}

// pipe copies both ways until either side ends, then ends both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)

	cp := func(dst, src net.Conn) {
		io.Copy(dst, src) //nolint:errcheck // either side ending is the end
		done <- struct{}{}
	}

	go cp(a, b)
	go cp(b, a)

	<-done
	a.Close() //nolint:errcheck
	b.Close() //nolint:errcheck
	<-done
}

// leaderKnown asks a member (host:port of its client URL) for its Status:
// a member cut off from the others reports leader 0 (etcd v3.7.1
// api/v3rpc/maintenance.go Status: Leader is the member's own raft view). Nil
// without a gateway.
func (g *etcdGateway) leaderKnown() func(ctx context.Context, member string) bool {
	if g == nil {
		return nil
	}

	return func(ctx context.Context, member string) bool {
		st, err := g.status(ctx, "https://"+member)

		return err == nil && st.Leader != 0
	}
}
