package talos

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// kubeServer is kube-apiserver's port on one address (a control plane's
// address or the VIP, cluster.controlPlane.localAPIServerPort): a TCP
// forwarder to the cluster's real apiserver (kubecp.go). TLS passes
// through, so clients authenticate to the real apiserver with their own
// certificates and see its serving certificate.
type kubeServer struct {
	sim     *Sim
	cluster *cluster
	addr    netip.AddrPort

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func (k *kubeServer) start() {
	s := k.sim

	s.mu.Lock()
	node := k.cluster.serving[k.addr]
	s.mu.Unlock()

	if node == nil {
		return
	}

	l, err := net.Listen("tcp", k.addr.String())
	if err != nil {
		node.logf("kube-apiserver cannot listen", "address", k.addr.String(), "error", err)

		return
	}

	k.mu.Lock()
	k.l, k.conns = l, map[net.Conn]struct{}{}
	k.mu.Unlock()

	k.wg.Add(1)

	go k.accept(l)
}

func (k *kubeServer) accept(l net.Listener) {
	defer k.wg.Done()

	for {
		c, err := l.Accept()
		if err != nil {
			return
		}

		k.wg.Add(1)

		go k.forward(c)
	}
}

func (k *kubeServer) forward(c net.Conn) {
	defer k.wg.Done()
	defer c.Close() //nolint:errcheck

	var backend string

	k.sim.mu.Lock()
	kcp := k.cluster.kube
	k.sim.mu.Unlock()

	if kcp != nil {
		backend, _ = kcp.serving()
	}

	if backend == "" {
		return // nothing serves: the connection is closed, as by a dying apiserver
	}

	b, err := net.DialTimeout("tcp", backend, 5*time.Second)
	if err != nil {
		return
	}
	defer b.Close() //nolint:errcheck

	if !k.track(c, b) {
		return
	}
	defer k.untrack(c, b)

	done := make(chan struct{}, 2)

	go func() { io.Copy(b, c); closeWrite(b); done <- struct{}{} }() //nolint:errcheck
	go func() { io.Copy(c, b); closeWrite(c); done <- struct{}{} }() //nolint:errcheck

	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite() //nolint:errcheck
	}
}

func (k *kubeServer) track(cs ...net.Conn) bool {
	k.mu.Lock()
	defer k.mu.Unlock()

	if k.conns == nil {
		return false
	}

	for _, c := range cs {
		k.conns[c] = struct{}{}
	}

	return true
}

func (k *kubeServer) untrack(cs ...net.Conn) {
	k.mu.Lock()
	defer k.mu.Unlock()

	for _, c := range cs {
		delete(k.conns, c)
	}
}

// stop closes the listener and every forwarded connection (the node's
// apiserver went away).
func (k *kubeServer) stop() {
	k.mu.Lock()
	l, conns := k.l, k.conns
	k.l, k.conns = nil, nil
	k.mu.Unlock()

	if l != nil {
		l.Close() //nolint:errcheck
	}

	for c := range conns {
		c.Close() //nolint:errcheck
	}

	k.wg.Wait()
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
