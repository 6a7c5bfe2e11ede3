package talos

import (
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// connSet tracks the connections a gRPC server accepted, so that stopping the
// server can cut them. grpc-go's Stop and GracefulStop both wait until every
// accepted connection has finished its TLS and HTTP/2 handshake (Server.stop
// waits on serveWG, which handleRawConn holds for up to the 120 s default
// ConnectionTimeout; grpc-go server.go): a client that connects and sends
// nothing would otherwise hold a reboot, and Sim.Close, for two minutes.
type connSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func newConnSet() *connSet { return &connSet{conns: map[net.Conn]struct{}{}} }

// listen wraps l: the connections it accepts join the set.
func (s *connSet) listen(l net.Listener) net.Listener { return &trackedListener{Listener: l, set: s} }

// closeAll cuts every connection, and any accepted from now on.
func (s *connSet) closeAll() {
	s.mu.Lock()
	conns := s.conns
	s.conns, s.closed = map[net.Conn]struct{}{}, true
	s.mu.Unlock()

	for c := range conns {
		c.Close() //nolint:errcheck
	}
}

type trackedListener struct {
	net.Listener
	set *connSet
}

func (l *trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}

	tc := &trackedConn{Conn: c, set: l.set}

	l.set.mu.Lock()
	closed := l.set.closed
	if !closed {
		l.set.conns[tc] = struct{}{}
	}
	l.set.mu.Unlock()

	if closed {
		c.Close() //nolint:errcheck
	}

	return tc, nil
}

type trackedConn struct {
	net.Conn
	set *connSet
}

func (c *trackedConn) Close() error {
	c.set.mu.Lock()
	delete(c.set.conns, c)
	c.set.mu.Unlock()

	return c.Conn.Close()
}

// stopGRPC stops a server. With a grace period it first lets in-flight calls
// (such as the ApplyConfiguration that triggered a reboot) finish, for at
// most that long, like Talos's factory.ServerGracefulStop; then it cuts every
// connection. A grace of 0 is a power cut.
func stopGRPC(srv *grpc.Server, conns *connSet, grace time.Duration) {
	if grace > 0 {
		done := make(chan struct{})

		go func() {
			srv.GracefulStop()
			close(done)
		}()

		select {
		case <-done:
			return
		case <-time.After(grace):
		}
	}

	conns.closeAll()
	srv.Stop()
}
