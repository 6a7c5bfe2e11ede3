// Package factory serves a minimal Talos Image Factory on loopback for the
// lab: schematic registration and lookup, the official extension list and
// image downloads' answers, following siderolabs/image-factory's HTTP API
// (docs/api.md, internal/frontend/http). Registered schematics go into the
// Talos simulator's Catalog, so a VM that boots a schematic's ISO gets
// exactly its extensions.
//
// It stands for the public factory too: the lab's Proxmox asks it about
// downloads from factory.talos.dev, so a custom schematic is "404 Not Found"
// there until it is registered, as on the real one.
package factory

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// PublicHost is the public Image Factory's host, whose URLs the lab's
// factory answers for.
const PublicHost = "factory.talos.dev"

// Options configure a factory.
type Options struct {
	// Listen address; loopback only. Default 127.0.0.1:0.
	Listen string
	// Catalog receives registered schematics and is where schematics the
	// public factory already has are found (the empty one, combinations of
	// official extensions, what tests register). Default: a new catalog.
	Catalog *talos.Catalog
	// Logf receives log lines; nil discards them.
	Logf func(format string, args ...any)
}

// Server is a running factory.
type Server struct {
	opts Options
	srv  *http.Server
	ln   net.Listener
	url  string

	mu         sync.Mutex
	schematics map[string][]byte // id -> canonical YAML of POSTed schematics
	extensions []string          // official extension names
	posts      int
}

// Start serves a factory until Close.
func Start(opts Options) (*Server, error) {
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}

	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("lab factory: listen address %q: %w", opts.Listen, err)
	}

	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("lab factory: listen address %q is not a loopback address; the lab serves on loopback only", opts.Listen)
	}

	if opts.Catalog == nil {
		opts.Catalog = talos.NewCatalog()
	}

	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("lab factory: listen on %s: %w", opts.Listen, err)
	}

	s := &Server{
		opts: opts, ln: ln, url: "http://" + ln.Addr().String(),
		schematics: map[string][]byte{}, extensions: OfficialExtensions(),
	}
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}

	go func() { _ = s.srv.Serve(ln) }()

	return s, nil
}

// URL is the factory's base URL, "http://127.0.0.1:<port>".
func (s *Server) URL() string { return s.url }

// Close stops serving.
func (s *Server) Close() error { return s.srv.Close() }

// Catalog is where registered schematics go.
func (s *Server) Catalog() *talos.Catalog { return s.opts.Catalog }

// AddExtensions makes more extension names official (for tests of names
// the built-in v1.12.5 list lacks).
func (s *Server) AddExtensions(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()

	for _, n := range names {
		if !slices.Contains(s.extensions, n) {
			s.extensions = append(s.extensions, n)
		}
	}
}

// Registrations counts successful POST /schematics calls (new or not).
func (s *Server) Registrations() int {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.posts
}

// Register stores a schematic as POST /schematics does and returns its ID.
func (s *Server) Register(sch *Schematic) (string, error) {
	id, _, err := s.register(sch)

	return id, err
}

// register is Register, also returning the schematic's canonical form.
func (s *Server) register(sch *Schematic) (string, []byte, error) {
	if err := sch.Validate(); err != nil {
		return "", nil, err
	}

	canonical, err := sch.Marshal()
	if err != nil {
		return "", nil, err
	}

	id := idOf(canonical)

	s.mu.Lock()
	_, existed := s.schematics[id]
	s.schematics[id] = canonical
	s.posts++
	s.mu.Unlock()

	s.opts.Catalog.RegisterSchematic(id, sch.Customization.SystemExtensions.OfficialExtensions)

	if existed {
		s.logf("image factory: schematic already exists, id %s", id)
	} else {
		s.logf("image factory: schematic created, id %s, extensions %v", id, sch.Customization.SystemExtensions.OfficialExtensions)
	}

	return id, canonical, nil
}

// errNotFound is the factory's 404 for schematics it does not have.
var errNotFound = errors.New("not found")

// lookup returns a schematic the factory has: POSTed here, or known to the
// catalog (the public factory's well-known and common schematics).
func (s *Server) lookup(id string) (*Schematic, error) {
	if !schematicIDPattern.MatchString(id) {
		return nil, fmt.Errorf("schematic ID %q not found: %w", id, errNotFound)
	}

	s.mu.Lock()
	canonical, ok := s.schematics[id]
	s.mu.Unlock()

	if ok {
		return ParseSchematic(canonical)
	}

	exts, ok := s.opts.Catalog.Lookup(id)
	if !ok {
		return nil, fmt.Errorf("schematic ID %q not found: %w", id, errNotFound)
	}

	sch := &Schematic{Customization: Customization{SystemExtensions: SystemExtensions{OfficialExtensions: exts}}}
	if got, err := sch.ID(); err != nil || got != id {
		// Registered in the catalog with customizations this factory never saw.
		return nil, fmt.Errorf("schematic ID %q not found: %w", id, errNotFound)
	}

	return sch, nil
}

// official reports whether an extension name is official.
func (s *Server) official(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()

	return slices.Contains(s.extensions, name)
}

// Serves reports whether a URL is this factory's or the public factory's.
func (s *Server) Serves(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}

	return u.Host == PublicHost || "http://"+u.Host == s.url
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}
