package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// releaseServer stands in for the GitHub release: it serves the plugin archives that
// `make dist` builds (gen/dist, this machine's platform) on loopback, at the path of
// GitHub's release downloads, and records what the engine asked for.
type releaseServer struct {
	URL     string // the download URL of release v<version>
	mu      sync.Mutex
	fetched []string
}

func (s *releaseServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.fetched...)
}

func startReleaseServer(t *testing.T, version string) *releaseServer {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "./gen/dist", "plugins", "-dir", dir, "-platforms", "host")
	cmd.Dir = harness.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the release archive (gen/dist): %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &releaseServer{}
	prefix := "/proxmoxtalos/proxmoxtalos/releases/download/v" + version + "/"
	files := http.StripPrefix(prefix, http.FileServer(http.Dir(dir)))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.fetched = append(s.fetched, r.URL.Path)
		s.mu.Unlock()
		if !strings.HasPrefix(r.URL.Path, prefix) {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.URL = "http://" + ln.Addr().String() + prefix
	return s
}

// downloadEnv is a hermetic environment whose engine may download plugins, with the
// schema's pluginDownloadURL (GitHub releases of proxmoxtalos/proxmoxtalos) redirected to
// the loopback release, and an empty plugin cache. Ambient plugins stay ignored, so
// nothing but the download can provide the provider.
func downloadEnv(t *testing.T, srv *releaseServer) *harness.Env {
	t.Helper()
	env := harness.NewEnv(t)
	env.Extra = map[string]string{
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "false",
		"PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES": `^github://api\.github\.com/proxmoxtalos/proxmoxtalos$=` +
			strings.Replace(srv.URL, "/v"+repoVersion(t)+"/", "/v${VERSION}/", 1),
	}
	if entries, _ := os.ReadDir(filepath.Join(env.Home, "plugins")); len(entries) != 0 {
		t.Fatalf("the plugin cache of a new environment is not empty: %v", entries)
	}
	return env
}

func repoVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// installedPlugin checks that the engine installed the plugin of this version into the
// environment's plugin cache from the loopback release.
func installedPlugin(t *testing.T, env *harness.Env, srv *releaseServer, version string) {
	t.Helper()
	bin := filepath.Join(env.Home, "plugins", "resource-proxmoxtalos-v"+version, "pulumi-resource-proxmoxtalos")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("the engine did not install the plugin into %s: %v", bin, err)
	}
	archive := "pulumi-resource-proxmoxtalos-v" + version + "-" + runtime.GOOS + "-" + runtime.GOARCH + ".tar.gz"
	if got := srv.requests(); !slicesContainSuffix(got, "/"+archive) {
		t.Errorf("the engine did not download %s from the release; it asked for %v", archive, got)
	}
}

func slicesContainSuffix(list []string, suffix string) bool {
	for _, s := range list {
		if strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}

// A user's YAML program with no plugins section: the engine downloads the provider from the
// release named by the version and pluginDownloadURL options, installs it and runs it
// against the lab (a VM created and destroyed).
func TestPluginDownloadedByEngineYAML(t *testing.T) {
	t.Parallel()
	version := repoVersion(t)
	srv := startReleaseServer(t, version)
	env := downloadEnv(t, srv)
	_, labConfig := harness.StartLab(t, lab.Options{})
	dir := t.TempDir()
	program := `name: download-yaml
runtime: yaml
resources:
  vm:
    type: proxmoxtalos:proxmox:VirtualMachine
    options:
      version: ` + version + `
      pluginDownloadURL: github://api.github.com/proxmoxtalos/proxmoxtalos
    properties:
      node: pve1
      name: downloaded
      cpu: { cores: 1 }
      memory: { dedicated: 512 }
      disks:
        - { interface: scsi0, storage: local-lvm, size: 2 }
outputs:
  vmId: ${vm.vmId}
`
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	p := harness.OpenYAMLProject(t, env, dir)
	p.ConfigureLab(t, labConfig)
	if up := p.Up(t); up.ExitCode != 0 {
		t.Fatalf("up with the plugin downloaded by the engine: %s", up)
	}
	installedPlugin(t, env, srv, version)
	if out := strings.TrimSpace(p.MustRun(t, "stack", "output", "vmId").Stdout); out == "" || out == "0" {
		t.Errorf("vmId output = %q: the downloaded provider did not create the VM", out)
	}
	if r := p.Destroy(t); r.ExitCode != 0 {
		t.Fatalf("destroy: %s", r)
	}
}

// An inline Go program on the generated Go SDK, with no plugins in its project settings:
// the SDK's own pluginDownloadURL (the schema's) makes the engine download the provider,
// which creates and destroys a VM in the lab.
func TestPluginDownloadedByEngineGo(t *testing.T) {
	t.Parallel()
	version := repoVersion(t)
	srv := startReleaseServer(t, version)
	env := downloadEnv(t, srv)
	_, labConfig := harness.StartLab(t, lab.Options{})
	program := func(ctx *pulumi.Context) error {
		vm, err := proxmox.NewVirtualMachine(ctx, "vm", &proxmox.VirtualMachineArgs{
			Node:   pulumi.String("pve1"),
			Name:   pulumi.String("downloaded"),
			Cpu:    &proxmox.VirtualMachineCpuArgs{Cores: pulumi.Int(1)},
			Memory: &proxmox.VirtualMachineMemoryArgs{Dedicated: pulumi.Int(512)},
			Disks: proxmox.VirtualMachineDiskArray{
				&proxmox.VirtualMachineDiskArgs{Interface: pulumi.String("scsi0"), Storage: pulumi.String("local-lvm"), Size: pulumi.Int(2)},
			},
		})
		if err != nil {
			return err
		}
		ctx.Export("vmId", vm.VmId)
		return nil
	}
	stack := harness.InlineStackInstalled(t, env, "download-go", program, &labConfig)
	ctx := context.Background()
	res, err := stack.Up(ctx)
	if err != nil {
		t.Fatalf("inline up with the plugin downloaded by the engine: %v", err)
	}
	installedPlugin(t, env, srv, version)
	if id, _ := res.Outputs["vmId"].Value.(float64); id == 0 {
		t.Errorf("vmId output = %v: the downloaded provider did not create the VM", res.Outputs["vmId"].Value)
	}
	if _, err := stack.Destroy(ctx); err != nil {
		t.Fatalf("inline destroy: %v", err)
	}
}
