package talosapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// Talos's log record holds the error as a JSON field (quotes escaped);
// the lab's console line holds it as text. Both count, the last in the
// log is the last error; the URL and its host never reach its text, and other URLs' failures do not count.
func TestFetchFailuresInTheKernelLog(t *testing.T) {
	t.Parallel()
	const u = "https://git.example.com:8443/s3cret/app.yaml?token=t0k"
	log := "user: warning: [2026-11-28T15:00:01Z]: [talos] controller failed {\"component\": \"controller-runtime\", \"controller\": \"k8s.ExtraManifestController\", \"error\": \"1 error occurred:\\n\\t* error downloading \\\"" + u + "\\\": bad response code: 404\\n\\n\"}\n" +
		"user: warning: [2026-11-28T15:00:03Z]: [talos] controller failed controller=k8s.ExtraManifestController error=2 errors occurred:\n\t* error downloading \"https://other.example.com/x.yaml\": bad response code: 500\n\t* error downloading \"" + u + "\": Get \"" + u + "\": dial tcp: lookup git.example.com: no such host\n\n\n"
	f := fetchFailuresIn(log, u)
	if f.Count != 2 {
		t.Errorf("count %d, want 2", f.Count)
	}
	if f.Last != `Get "`+talosconfig.InputDigest(u)+`": dial tcp: lookup <host>: no such host` {
		t.Errorf("last error %q", f.Last)
	}
	for _, leak := range []string{"s3cret", "t0k", "git.example.com"} {
		if strings.Contains(f.Last, leak) {
			t.Errorf("the error text shows %q: %q", leak, f.Last)
		}
	}
	json := log[:strings.Index(log, "\n")+1]
	if g := fetchFailuresIn(json, u); g.Count != 1 || g.Last != "bad response code: 404" {
		t.Errorf("Talos's own record: %+v", g)
	}
	if g := fetchFailuresIn(log, "https://git.example.com:8443/s3cret/app"); g.Count != 0 {
		t.Errorf("a prefix of the URL counts %d failures", g.Count)
	}
}

// Every http(s) URL leaves the error text, however it is written: net/http
// prints a URL with userinfo masked (`user:***@host`), which is not the
// URL in the configuration, and a redirect may name another URL.
func TestRedactURLBlanksEveryURL(t *testing.T) {
	t.Parallel()
	const u = "https://oauth2:TOKEN@git.example.com/team/cni.yaml?sig=abc123"
	d := talosconfig.InputDigest(u)
	// The error net/http's client gives for u (its transport fails as a
	// DNS lookup would; nothing leaves the test), as Talos logs it.
	c := &http.Client{Transport: failingTransport{errors.New("dial tcp: lookup git.example.com: no such host")}}
	_, err := c.Get(u) //nolint:bodyclose,noctx // the transport fails: no body
	if err == nil {
		t.Fatal("the request succeeded")
	}
	netErr := err.Error()
	if !strings.Contains(netErr, "oauth2:***@git.example.com/team/cni.yaml?sig=abc123") {
		t.Fatalf("net/http no longer prints the URL as the test expects: %s", netErr)
	}
	for in, want := range map[string]string{
		netErr: `Get "` + d + `": dial tcp: lookup <host>: no such host`,
		`Get "https://user:***@host.example/p?sig=x": EOF`:                       `Get "` + d + `": EOF`,
		"stopped after 10 redirects, last https://cdn.example.org/x?sig=s3c 302": "stopped after 10 redirects, last " + d + " 302",
		"error downloading '" + u + "': HTTP://Mirror.example/a b":               "error downloading '" + d + "': " + d + " b",
		"bad response code: 404":                                                 "bad response code: 404",
	} {
		got := redactURL(in, u)
		if got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
		for _, leak := range []string{"oauth2", "TOKEN", "git.example.com", "team", "sig=", "s3c", "cdn.example.org", "host.example"} {
			if strings.Contains(got, leak) {
				t.Errorf("redactURL(%q) shows %q: %q", in, leak, got)
			}
		}
	}
}

type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }
