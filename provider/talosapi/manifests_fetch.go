package talosapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// FetchFailures are the failed downloads of one URL manifest a control
// plane's configuration names, as its kernel log records them.
type FetchFailures struct {
	// Priority is the prefix Talos names the manifest with: "05" (CNI
	// URLs), "30" (external cloud provider), "99" (extraManifests).
	Priority string
	// Digest is talosconfig.InputDigest of the URL: the URL itself may be
	// a secret.
	Digest string
	// Count is how many failed downloads the log holds.
	Count int
	// Last is the last failure's error, with every URL in it replaced by
	// Digest and the URL's host left out.
	Last string
}

// ManifestFetchFailures reads how often a control plane failed to download
// each URL manifest its active configuration names. Talos exposes no
// status for it: ExtraManifestController (siderolabs/talos v1.14.1
// internal/app/machined/pkg/controllers/k8s/extra_manifest.go processURL)
// returns `error downloading "<url>": <error>`, the controller runtime logs
// the failed run ("controller failed", cosi-project/runtime v1.16.2
// rruntime/run.go) to machined's log, which reaches the kernel log
// (`talosctl dmesg`), and runs the controller again after an exponential
// backoff; a download that succeeds renders the Manifest resource, a slow
// one logs nothing until it ends. URLs without a failure are left out.
func ManifestFetchFailures(ctx context.Context, t Target, o Options) ([]FetchFailures, error) {
	o = o.withDefaults()

	conn, err := ConnectSecure(ctx, t, o)
	if err != nil {
		return nil, err
	}
	defer conn.Close() //nolint:errcheck

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	nc, err := readActiveConfig(actx, conn) // the persistent one is not needed
	if err != nil {
		return nil, fmt.Errorf("control plane %s: %w", t.Node, err)
	}
	cfg, err := loadConfig(nc.Active)
	if err != nil {
		return nil, err
	}
	if cfg.Cluster() == nil {
		return nil, nil
	}
	cl := cfg.Cluster()
	type manifestURL struct{ prio, url string }
	var urls []manifestURL
	for _, u := range cl.Network().CNI().URLs() {
		urls = append(urls, manifestURL{"05", u})
	}
	for _, u := range cl.ExternalCloudProvider().ManifestURLs() {
		urls = append(urls, manifestURL{"30", u})
	}
	for _, u := range cl.ExtraManifestURLs() {
		urls = append(urls, manifestURL{"99", u})
	}
	if len(urls) == 0 {
		return nil, nil
	}

	log, err := readKernelLog(actx, conn)
	if err != nil {
		return nil, fmt.Errorf("reading the kernel log of control plane %s: %s", t.Node, statusMessage(err))
	}

	var out []FetchFailures
	for _, u := range urls {
		if f := fetchFailuresIn(log, u.url); f.Count > 0 {
			f.Priority, f.Digest = u.prio, talosconfig.InputDigest(u.url)
			out = append(out, f)
		}
	}
	return out, nil
}

// readKernelLog reads a node's kernel log as it is now (`talosctl dmesg`).
func readKernelLog(ctx context.Context, c *Conn) (string, error) {
	stream, err := c.client.Dmesg(c.nodeContext(ctx), false, false)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		d, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		b.Write(d.GetBytes())
	}
}

// fetchFailuresIn counts the download errors of rawURL in a kernel log:
// `error downloading "<url>": <error>` in Talos's own log line, where the
// quotes are escaped (`\"`) inside the JSON fields of its log record.
func fetchFailuresIn(log, rawURL string) FetchFailures {
	var (
		f    FetchFailures
		last = -1
	)
	for _, q := range []string{`"`, `\"`} {
		mark := "error downloading " + q + rawURL + q
		for at := 0; ; {
			i := strings.Index(log[at:], mark)
			if i < 0 {
				break
			}
			at += i + len(mark)
			f.Count++
			if at > last {
				last = at
				f.Last = redactURL(errorText(strings.TrimPrefix(log[at:], ": "), q != `"`), rawURL)
			}
		}
	}
	return f
}

// errorText is the error at the start of s, up to the end of its line; in
// a JSON field (inJSON) up to the field's end or its escaped line end
// (`\n`), unescaped.
func errorText(s string, inJSON bool) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if inJSON {
		if i := strings.Index(s, `\n`); i >= 0 {
			s = s[:i]
		}
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' {
				i++ // an escaped character
				continue
			}
			if s[i] == '"' {
				s = s[:i]
				break
			}
		}
		s = strings.ReplaceAll(s, `\"`, `"`)
	}
	return strings.TrimSpace(s)
}

// anyURL is an http(s) URL in an error text, up to a quote or a space:
// the URL the error is about, as Talos quotes it, or as net/http prints it
// (url.Error: `Get "https://user:***@host/p?sig=x": ...`, the password
// masked but the user, path and query kept), or one a redirect names.
var anyURL = regexp.MustCompile(`(?i)https?://[^\s"'<>]+`)

// redactURL leaves every http(s) URL and rawURL's host out of an error
// text (a DNS or TLS error names the host): a URL becomes rawURL's digest,
// the label the messages name the manifest by.
func redactURL(s, rawURL string) string {
	digest := talosconfig.InputDigest(rawURL)
	s = strings.ReplaceAll(s, rawURL, digest)
	s = anyURL.ReplaceAllLiteralString(s, digest)
	if u, err := url.Parse(rawURL); err == nil && u.Hostname() != "" {
		s = strings.ReplaceAll(s, u.Host, "<host>")
		s = strings.ReplaceAll(s, u.Hostname(), "<host>")
	}
	return s
}
