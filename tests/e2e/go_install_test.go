package e2e

import (
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

const rootModule = "github.com/proxmoxtalos/proxmoxtalos"

// `go install .../provider/cmd/pulumi-resource-proxmoxtalos@v<version>` and
// `go get .../sdk@v<version>` as a user runs them once the tags v<version> and
// sdk/v<version> exist: the committed tree (git archive HEAD) is served as those two module
// versions by a file proxy, every other module comes from the machine's module download
// cache (also a file proxy), nothing from the network (GOPROXY has no network entry, no
// checksum database), into an empty module cache. Go refuses such an install when the root
// go.mod has a replace directive, when a package or embedded file lies outside the module's
// zip, or when go.sum is incomplete.
func TestGoInstallFromModuleProxy(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot(t)
	version := "v" + repoVersion(t)
	tree := t.TempDir()
	archive := exec.Command("sh", "-c", `git archive --format=tar HEAD | tar -x -C "$1"`, "sh", tree)
	archive.Dir = root
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive HEAD: %v\n%s", err, out)
	}
	proxy := t.TempDir()
	writeProxyModule(t, proxy, rootModule, version, tree)
	writeProxyModule(t, proxy, rootModule+"/sdk", version, filepath.Join(tree, "sdk"))

	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	downloads := filepath.Join(goEnv("GOMODCACHE"), "cache", "download")
	modcache, gobin, work := t.TempDir(), t.TempDir(), t.TempDir()
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(downloads),
		"GOSUMDB=off", "GOMODCACHE="+modcache, "GOBIN="+gobin, "GOWORK=off", "GOTOOLCHAIN=local",
		"GOFLAGS=-trimpath", "CGO_ENABLED=0") // the Makefile's settings: compiled packages come from the build cache
	t.Cleanup(func() { // the module cache is read-only: only go can remove it
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = env
		_ = clean.Run()
	})
	goCmd := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	goCmd(work, "install", rootModule+"/provider/cmd/pulumi-resource-proxmoxtalos@"+version)
	bin := filepath.Join(gobin, "pulumi-resource-proxmoxtalos")
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("go install wrote no Go binary: %v", err)
	}
	if bi.Main.Path != rootModule || bi.Main.Version != version {
		t.Errorf("installed binary is %s@%s, want %s@%s", bi.Main.Path, bi.Main.Version, rootModule, version)
	}
	// Built without the Makefile's ldflags, the provider takes its version from the module.
	p := &harness.Project{Env: harness.NewEnv(t), Dir: t.TempDir()}
	r := p.Run(t, "package", "get-schema", bin)
	var schema struct {
		Version string `json:"version"`
	}
	if r.ExitCode != 0 || json.Unmarshal([]byte(r.Stdout), &schema) != nil || "v"+schema.Version != version {
		t.Errorf("the installed provider reports version %q, want %s: %s", schema.Version, version, r)
	}

	// A user's Go program requiring the SDK at the tag sdk/v<version>.
	consumer := t.TempDir()
	if err := os.WriteFile(filepath.Join(consumer, "go.mod"), []byte("module consumer\n\ngo 1.25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := `package main

import (
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/talos"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		_, err := talos.NewMachineSecrets(ctx, "secrets", &talos.MachineSecretsArgs{})
		return err
	})
}
`
	if err := os.WriteFile(filepath.Join(consumer, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd(consumer, "get", rootModule+"/sdk@"+version)
	goCmd(consumer, "mod", "tidy")
	goCmd(consumer, "build", "-o", os.DevNull, ".")
}

// writeProxyModule lays out one module version in a GOPROXY file tree, zipped from dir as
// the module proxy would zip the tagged tree (nested modules left out).
func writeProxyModule(t *testing.T, proxy, path, version, dir string) {
	t.Helper()
	escaped, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	zf, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	if err := modzip.CreateFromDir(zf, module.Version{Path: path, Version: version}, dir); err != nil {
		t.Fatalf("zipping %s@%s: %v", path, version, err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info := `{"Version":"` + version + `","Time":"2026-01-01T00:00:00Z"}`
	for name, data := range map[string][]byte{version + ".mod": mod, version + ".info": []byte(info), "list": []byte(version + "\n")} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
