package talosapi

import (
	"strings"
	"testing"
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
	if f.Last != `Get "<url>": dial tcp: lookup <host>: no such host` {
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
