package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestRunWritesStateAndServes runs the command in-process: the state file
// appears, the API answers with its token and CA, and cancelling stops it
// and removes the state file.
func TestRunWritesStateAndServes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stateFile := filepath.Join(dir, "lab.json")
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuf{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{nodes: "a,b", memory: 4096, cores: 4, bridges: "vmbr0,vmbr1", scale: 0, seed: 3, stateFile: stateFile, quiet: true, noTalos: true,
			pveum: []string{"user add ci@pve", "role add NodeAudit --privs Sys.Audit", "acl modify /nodes --roles NodeAudit --users ci@pve",
				"pveum user token add ci@pve tk --privsep 0"}}, out)
	}()
	var st State
	deadline := time.Now().Add(time.Minute) // a guard against hanging, not a speed check
	for {
		b, err := os.ReadFile(stateFile)
		if err == nil && json.Unmarshal(b, &st) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no state file after a minute (a hang guard); output: %s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if info, _ := os.Stat(stateFile); info.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %v", info.Mode())
	}
	if strings.Join(st.Nodes, ",") != "a,b" || !strings.HasPrefix(st.AddressBlock, "127.") || st.CACertFile != filepath.Join(dir, "lab-ca.pem") {
		t.Fatalf("state: %+v", st)
	}
	pem, _ := os.ReadFile(st.CACertFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if st.APIURL != st.Endpoint+"/api2/json" || !strings.Contains(st.CACertPEM, "BEGIN CERTIFICATE") {
		t.Fatalf("state: %+v", st)
	}
	req, _ := http.NewRequest("GET", st.APIURL+"/nodes/b/network?type=bridge", nil)
	req.Header.Set("Authorization", "PVEAPIToken="+st.APIToken)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"iface":"vmbr1"`) {
		t.Fatalf("network: %d %s", resp.StatusCode, body)
	}
	// the minted token is in the state file and holds only its ACL
	tok := st.Tokens["ci@pve!tk"]
	if !strings.HasPrefix(tok, "ci@pve!tk=") || !strings.Contains(out.String(), "token:         "+tok) {
		t.Fatalf("minted token %q not in the state file or output: %+v", tok, st.Tokens)
	}
	for path, want := range map[string]string{"/nodes/b/status": "200 OK", "/cluster/status": "403 Permission check failed (/, Sys.Audit)"} {
		req, _ := http.NewRequest("GET", st.APIURL+path, nil)
		req.Header.Set("Authorization", "PVEAPIToken="+tok)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Status != want {
			t.Errorf("%s with the minted token: %s, want %s", path, resp.Status, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stateFile); !os.IsNotExist(err) {
		t.Fatal("state file left behind")
	}
	if !strings.Contains(out.String(), "address block: "+st.AddressBlock) {
		t.Fatalf("output: %s", out.String())
	}
}

// The fault flags reach the lab's faults, scripts included (repeatable).
func TestParseFaultFlags(t *testing.T) {
	c, err := parseFlags([]string{"-fault-500", "0.05", "-fault-script", "task=qmstart,nth=2; power-off=pve2,after=1s,for=5s",
		"-fault-script", "call=POST /nodes/{node}/qemu/{vmid}/status/start"})
	if err != nil {
		t.Fatal(err)
	}
	f := c.faults
	if f.ServerErrorRate != 0.05 || len(f.Script) != 3 || f.Script[0].Task != "qmstart" || f.Script[0].Nth != 2 ||
		f.Script[1].PowerOff != "pve2" || f.Script[1].For != 5*time.Second || f.Script[2].Call == "" {
		t.Fatalf("faults %+v", f)
	}
	if _, err := parseFlags([]string{"-fault-script", "task=qmstart,oops=1"}); err == nil {
		t.Fatal("a bad rule was accepted")
	}
}

// TestPveumFileRunsTheREADMERecipe: the README's least-privilege recipe,
// saved as a file, runs through -pveum-file and mints the provider's token.
func TestPveumFileRunsTheREADMERecipe(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "\n## Proxmox privileges\n")
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	file := filepath.Join(t.TempDir(), "recipe.sh")
	if err := os.WriteFile(file, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := pve.Start(pve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tokens, err := runPveum(srv, nil, file)
	if err != nil {
		t.Fatal(err)
	}
	if tok := tokens["pulumi@pve!ci"]; !strings.HasPrefix(tok, "pulumi@pve!ci=") {
		t.Fatalf("the recipe minted %v", tokens)
	}
	if got := srv.Permissions("pulumi@pve!ci", "/vms/100"); !got["VM.Allocate"] || got["Permissions.Modify"] {
		t.Errorf("the recipe's token on /vms/100: %v", got)
	}
}
