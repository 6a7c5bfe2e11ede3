// Package pve is a stateful, in-memory Proxmox VE API server for tests and
// demos: nodes with CPU, memory and storage, VMs with configs, pending
// changes, locks and asynchronous tasks, storage content, cloud-init drives
// and guest agent answers. Requests are checked against the real API schema
// (package pveapi) and answered with PVE's texts. It listens on loopback
// only, over HTTPS with its own CA.
package pve

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	mrand "math/rand"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pveapi"
)

// upBeforeStart is how long the lab's hosts say they have run when the lab
// starts (their `uptime`, GET /cluster/resources and /nodes/{node}/status):
// a test's Proxmox hosts were booted before it, not by it. A host that says
// it booted moments ago may still start its onboot VMs (pve-guests.service's
// startall), so the provider's VM watch judges no stopped VM on it for 2
// minutes (vmwatch Policy.HostBoot); that is what a power loss is
// (RestartNode, oob.go: the uptime starts again), not a lab that just
// started with no VMs at all.
const upBeforeStart = time.Hour

// Server is a running lab Proxmox VE cluster.
type Server struct {
	opts     Options
	schema   *pveapi.Schema
	confM    *pveapi.Method // POST /nodes/{node}/qemu: the schema of config keys
	bootTime time.Time

	mu        sync.Mutex
	nodes     []*node
	vms       map[int]*vm
	cts       map[int]container // LXC containers: they only hold VMIDs here
	pools     map[string]*pool
	tasks     map[string]*task
	taskOrder []*task
	flocks    map[int]*flock
	rng       *mrand.Rand
	faults    Faults
	script    scriptState
	pid       uint32
	access    *access    // users, tokens, roles, ACLs (user.cfg); guarded by mu
	cloneHold *cloneHold // tests only: clones wait in their copy (clonehold.go)

	caPEM    []byte
	ln       net.Listener
	httpSrv  *http.Server
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	handlers map[string]handlerFunc
	stats    stats // what the API served (stats.go)
}

// Start builds a cluster from opts and serves its API until Close.
func Start(opts Options) (*Server, error) {
	if err := opts.withDefaults(); err != nil {
		return nil, err
	}
	schema, err := pveapi.Load()
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("lab: listen address %q: %w", opts.Listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("lab: listen address %q is not a loopback address; the lab serves on loopback only", opts.Listen)
	}
	seed := opts.Seed
	if seed == 0 {
		n, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
		seed = n.Int64()
	}
	if opts.TokenSecret == "" {
		opts.TokenSecret = newUUID(mrand.New(mrand.NewSource(seed ^ 0x5eed)))
	}
	tlsCfg, caPEM, err := newTLS()
	if err != nil {
		return nil, fmt.Errorf("lab: create TLS certificates: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("lab: listen on %s: %w", opts.Listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts: opts, schema: schema, confM: schema.Method("POST", "/nodes/{node}/qemu"),
		bootTime: time.Now().Add(-upBeforeStart),
		vms:      map[int]*vm{}, cts: map[int]container{}, pools: map[string]*pool{}, tasks: map[string]*task{},
		flocks: map[int]*flock{}, rng: mrand.New(mrand.NewSource(seed)),
		faults: opts.Faults, pid: 100000, caPEM: caPEM, ln: ln, ctx: ctx, cancel: cancel,
	}
	if err := s.addAdminToken(); err != nil {
		ln.Close()
		cancel()
		return nil, err
	}
	for _, ns := range opts.Nodes {
		n := &node{spec: ns, online: true, bootTime: s.bootTime}
		for _, st := range ns.Storages {
			n.storages = append(n.storages, &storage{spec: st, node: ns.Name, volumes: map[string]*volume{}})
		}
		s.nodes = append(s.nodes, n)
	}
	s.resetScriptLocked()
	if err := s.registerHandlers(); err != nil {
		ln.Close()
		cancel()
		return nil, err
	}
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){}, // no HTTP/2
		ErrorLog:          log.New(io.Discard, "", 0),                               // TLS handshake noise from probing clients
	}
	tlsLn := tls.NewListener(ln, tlsCfg)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.httpSrv.Serve(tlsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logf("serve: %v", err)
		}
	}()
	s.logf("Proxmox VE lab listening on %s with nodes %v", s.Endpoint(), s.NodeNames())
	return s, nil
}

// Close stops serving, powers off all guests and waits for running tasks.
func (s *Server) Close() error {
	s.cancel()
	// Close, not Shutdown: Shutdown waits up to 5 s for connections that
	// never sent a request (a failed TLS handshake, say).
	err := s.httpSrv.Close()
	s.mu.Lock()
	var off []Guest
	for _, v := range s.vms {
		if v.running {
			off = append(off, s.powerOffLocked(v))
		}
	}
	s.mu.Unlock()
	powerOff(off...)
	s.wg.Wait()
	return err
}

// Endpoint is the base URL clients use, "https://127.0.0.1:<port>".
func (s *Server) Endpoint() string { return "https://" + s.ln.Addr().String() }

// APIURL is the API base, Endpoint() + "/api2/json".
func (s *Server) APIURL() string { return s.Endpoint() + "/api2/json" }

// CACertPEM is the CA that signed the server certificate.
func (s *Server) CACertPEM() []byte { return append([]byte(nil), s.caPEM...) }

// addAdminToken creates the lab's admin token, Options.TokenID: a token
// without privilege separation, so it holds its user's rights, all of
// them (root@pam's, or an Administrator ACL on / for another user).
func (s *Server) addAdminToken() error {
	s.access = newAccess()
	user, name, ok := splitTokenID(s.opts.TokenID)
	if !ok {
		return fmt.Errorf("lab: TokenID %q is not a token id USER@REALM!NAME", s.opts.TokenID)
	}
	if s.access.users[user] == nil {
		s.access.users[user] = &accessUser{enabled: true, groups: map[string]bool{}, tokens: map[string]*apiToken{}}
		s.access.acl.users[user] = map[string]bool{"Administrator": true}
	}
	_, err := s.addTokenLocked(user, name, false, s.opts.TokenSecret)
	return err
}

// APIToken is the full token, "USER@REALM!TOKENID=SECRET".
func (s *Server) APIToken() string { return s.opts.TokenID + "=" + s.opts.TokenSecret }

// NodeNames lists the cluster's nodes.
func (s *Server) NodeNames() []string {
	var out []string
	for _, n := range s.nodes {
		out = append(out, n.spec.Name)
	}
	return out
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

func (s *Server) node(name string) *node {
	for _, n := range s.nodes {
		if n.spec.Name == name {
			return n
		}
	}
	return nil
}

// newUUID returns a random RFC 4122 version 4 UUID from r.
func newUUID(r *mrand.Rand) string {
	var b [16]byte
	r.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
