package talos

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// A control plane fetches the manifests its configuration names by URL
// and renders each as a Manifest resource "<priority>-<url>" (siderolabs/
// talos v1.13.9 internal/app/machined/pkg/controllers/k8s/control_plane.go
// ControlPlaneExtraManifestsController: cluster.network.cni.urls priority
// "05", cluster.externalCloudProvider.manifests "30", cluster.extraManifests
// "99" with cluster.extraManifestHeaders; extra_manifest.go
// ExtraManifestController). A download that fails fails the controller
// run: the manifest is not rendered (one rendered before stays), manifests
// no longer named are not removed, the error is logged ("controller
// failed", `error downloading "<url>": ...`) and the controller runtime
// runs it again after a growing delay. Rendered manifests live in memory:
// every boot fetches again.
//
// The lab has no network beyond loopback: a URL whose host is a loopback
// address is fetched for real (tests serve manifests there); a host under
// a TLD that never resolves (RFC 2606/6761: .invalid, .test, .example,
// .localhost) fails as DNS does; any other URL is rendered with no
// objects, as if fetched: the add-ons the lab knows by their URLs (Talos
// CCM, serving certificate approver, Proxmox CCM; kubenodes.go) are played
// by its own controllers instead.
type urlManifest struct {
	id      string // "<priority>-<url>"
	url     string
	headers map[string]string
}

// urlManifests are the manifests cfg names by URL, in Talos's order.
func urlManifests(cfg config.Provider) []urlManifest {
	if cfg == nil || !isControlPlane(cfg) {
		return nil
	}

	cl := cfg.Cluster()

	var out []urlManifest

	for _, u := range cl.Network().CNI().URLs() {
		out = append(out, urlManifest{id: "05-" + u, url: u})
	}

	for _, u := range cl.ExternalCloudProvider().ManifestURLs() {
		out = append(out, urlManifest{id: "30-" + u, url: u})
	}

	for _, u := range cl.ExtraManifestURLs() {
		out = append(out, urlManifest{id: "99-" + u, url: u, headers: cl.ExtraManifestHeaderMap()})
	}

	return out
}

// fetchKey identifies a list of URL manifests (with headers).
func fetchKey(ms []urlManifest) string {
	return fmt.Sprintf("%v", ms)
}

// fetchState is a node's ExtraManifestController for URLs (guarded by
// sim.mu): what it rendered this boot, what it last rendered completely,
// whether a run is under way and how long the next retry waits.
type fetchState struct {
	rendered map[string]*k8s.Manifest
	doneKey  string
	running  bool
	backoff  time.Duration
	boot     int
}

// maybeFetchManifests starts a run of the controller when the node's URL
// manifests changed since it last rendered them all. sim.mu held.
func (n *Node) maybeFetchManifests() {
	f := &n.fetch
	if f.boot != n.gen {
		*f = fetchState{boot: n.gen}
	}

	if n.phase != PhaseRunning || n.active == nil || !isControlPlane(n.active) || f.running {
		return
	}

	ms := urlManifests(n.active)
	key := fetchKey(ms)

	if key == f.doneKey {
		return
	}

	f.running = true

	go n.fetchManifests(n.gen, ms, key)
}

// fetchManifests is one run of the controller, off sim.mu.
func (n *Node) fetchManifests(gen int, ms []urlManifest, key string) {
	got := map[string]*k8s.Manifest{}

	var errs []string

	for _, m := range ms {
		body, err := fetchManifest(n.ctx, m)
		if err != nil {
			errs = append(errs, fmt.Sprintf("error downloading %q: %v", m.url, err))

			continue
		}

		objs, err := parseManifest(body)
		if err != nil {
			errs = append(errs, fmt.Sprintf("error updating manifests: %v", err))

			continue
		}

		r := k8s.NewManifest(k8s.ControlPlaneNamespaceName, m.id)
		for _, o := range objs {
			r.TypedSpec().Items = append(r.TypedSpec().Items, k8s.SingleManifest{Object: o})
		}

		got[m.id] = r
	}

	s := n.sim

	s.mu.Lock()
	f := &n.fetch
	if f.boot != gen || n.ctx.Err() != nil {
		s.mu.Unlock()

		return
	}

	if f.rendered == nil {
		f.rendered = map[string]*k8s.Manifest{}
	}

	for id, r := range got {
		f.rendered[id] = r
	}

	f.running = false

	var retry time.Duration

	if len(errs) == 0 {
		want := map[string]bool{}
		for _, m := range ms {
			want[m.id] = true
		}

		for id := range f.rendered {
			if !want[id] {
				delete(f.rendered, id)
			}
		}

		f.doneKey, f.backoff = key, 0
	} else {
		f.backoff = min(max(2*f.backoff, time.Second), 30*time.Second)
		retry = f.backoff
	}
	s.mu.Unlock()

	if len(errs) > 0 {
		// cosi-project/runtime logs a failed controller run so (controller
		// "k8s.ExtraManifestController", its multierror as the error).
		n.logf("controller failed", "controller", "k8s.ExtraManifestController", "error", multiError(errs))

		time.AfterFunc(retry, func() {
			n.publish()
		})
	}

	n.publish()
	s.nudge()
}

// renderedURLManifests are the URL manifests a node rendered this boot,
// by ID. sim.mu held.
func (n *Node) renderedURLManifests() []*k8s.Manifest {
	if n.fetch.boot != n.gen {
		return nil
	}

	var out []*k8s.Manifest
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range n.fetch.rendered {
			if !yield(id) {
				return
			}
		}
	}) {
		out = append(out, n.fetch.rendered[id].DeepCopy().(*k8s.Manifest)) //nolint:forcetypeassert // DeepCopy keeps the type
	}

	return out
}

// neverResolves: TLDs reserved never to resolve (RFC 2606, RFC 6761).
var neverResolves = []string{".invalid", ".test", ".example", ".localhost"}

// fetchManifest downloads one manifest as go-getter's HTTP getter does
// (a GET with the extra headers; a status other than 2xx is "bad response
// code: N").
func fetchManifest(ctx context.Context, m urlManifest) ([]byte, error) {
	u, err := url.Parse(m.url)
	if err != nil {
		return nil, err
	}

	host := strings.ToLower(u.Hostname())
	for _, tld := range neverResolves {
		if strings.HasSuffix(host, tld) {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
	}

	if a, err := netip.ParseAddr(host); err != nil || !a.IsLoopback() {
		return nil, nil // the lab's stand-in for the internet: rendered with no objects
	}

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, err
	}

	for k, v := range m.headers {
		req.Header.Add(k, v)
	}

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close() //nolint:errcheck

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("bad response code: %d", resp.StatusCode)
	}

	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}

// multiError formats errors as hashicorp/go-multierror's ListFormatFunc.
func multiError(errs []string) string {
	if len(errs) == 1 {
		return "1 error occurred:\n\t* " + errs[0] + "\n\n"
	}

	return fmt.Sprintf("%d errors occurred:\n\t* %s\n\n", len(errs), strings.Join(errs, "\n\t* "))
}
