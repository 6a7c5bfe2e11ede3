package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testdata/schema.json is a small schema written by pulumi-go-provider for a toy resource
// (secret input, enum, nested type, default), a function and a config, with the real
// package metadata of provider/languages.go.
func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// downloadURL is the fixture's pluginDownloadURL (provider.PluginDownloadURL).
const downloadURL = "github://api.github.com/proxmoxtalos/proxmoxtalos"

func TestGoSDKIsItsOwnModule(t *testing.T) {
	t.Parallel()
	files, err := generate(fixture(t), "go", "v3.259.0")
	if err != nil {
		t.Fatal(err)
	}
	mod := string(files["go.mod"])
	if !strings.Contains(mod, "module github.com/proxmoxtalos/proxmoxtalos/sdk\n") ||
		!strings.Contains(mod, "github.com/pulumi/pulumi/sdk/v3 v3.259.0") {
		t.Errorf("sdk/go.mod is not the SDK module requiring the pinned Pulumi SDK:\n%s", mod)
	}
	toy := string(files["go/proxmoxtalos/proxmox/toy.go"])
	if !strings.Contains(toy, "func NewToy(") {
		t.Errorf("go/proxmoxtalos/proxmox/toy.go has no NewToy constructor; files: %v", slices.Sorted(maps.Keys(files)))
	}
	// The secret input must be wrapped as a secret by the SDK before it leaves the program.
	if !strings.Contains(toy, "pulumi.ToSecret(args.Token)") {
		t.Errorf("the secret input token is not made secret in toy.go")
	}
	if u := string(files["go/proxmoxtalos/internal/pulumiUtilities.go"]); !strings.Contains(u, `pulumi.PluginDownloadURL("`+downloadURL+`")`) {
		t.Errorf("the Go SDK does not pass the plugin download URL with resources (internal/pulumiUtilities.go)")
	}
	for p := range files {
		if p != "go.mod" && !strings.HasPrefix(p, "go/") {
			t.Errorf("Go SDK file %q lies outside sdk/go", p)
		}
	}
}

func TestNodePackageMetadata(t *testing.T) {
	t.Parallel()
	files, err := generate(fixture(t), "nodejs", "v3.259.0")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Name            string            `json:"name"`
		Version         string            `json:"version"`
		Repository      string            `json:"repository"`
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
		Pulumi          map[string]any    `json:"pulumi"`
	}
	if err := json.Unmarshal(files["nodejs/package.json"], &pkg); err != nil {
		t.Fatalf("nodejs/package.json: %v", err)
	}
	if pkg.Name != "@proxmoxtalos/proxmoxtalos" || pkg.Version != "0.1.0" {
		t.Errorf("package.json is %s@%s, want @proxmoxtalos/proxmoxtalos@0.1.0 (from the schema)", pkg.Name, pkg.Version)
	}
	if pkg.Dependencies["@pulumi/pulumi"] == "" || pkg.DevDependencies["typescript"] != "5.9.3" {
		t.Errorf("package.json dependencies not pinned as in the schema: %v %v", pkg.Dependencies, pkg.DevDependencies)
	}
	// The Node.js SDK passes the schema's plugin download URL with every resource (utilities.ts)
	// and names it in package.json, where the engine reads it for the plugin install.
	if pkg.Pulumi["server"] != downloadURL {
		t.Errorf("package.json pulumi.server is %v, want %s", pkg.Pulumi["server"], downloadURL)
	}
	if u := string(files["nodejs/utilities.ts"]); !strings.Contains(u, `pluginDownloadURL: "`+downloadURL+`"`) {
		t.Errorf("nodejs/utilities.ts does not pass the plugin download URL with resources:\n%s", u)
	}
	if pkg.Repository == "" {
		t.Errorf("package.json has no repository")
	}
	if _, ok := files["nodejs/proxmox/toy.ts"]; !ok {
		t.Errorf("no nodejs/proxmox/toy.ts; files: %v", slices.Sorted(maps.Keys(files)))
	}
}

func TestPythonPackageHasTypesAndReadme(t *testing.T) {
	t.Parallel()
	files, err := generate(fixture(t), "python", "v3.259.0")
	if err != nil {
		t.Fatal(err)
	}
	pyproject := string(files["python/pyproject.toml"])
	for _, want := range []string{`name = "pulumi_proxmoxtalos"`, `version = "0.1.0"`, `"pulumi>=3.259.0,<4.0.0"`, `"py.typed"`} {
		if !strings.Contains(pyproject, want) {
			t.Errorf("pyproject.toml lacks %s:\n%s", want, pyproject)
		}
	}
	var plugin struct {
		Resource bool   `json:"resource"`
		Server   string `json:"server"`
	}
	if err := json.Unmarshal(files["python/pulumi_proxmoxtalos/pulumi-plugin.json"], &plugin); err != nil || !plugin.Resource || plugin.Server != downloadURL {
		t.Errorf("pulumi-plugin.json does not name the plugin download URL: %+v %v", plugin, err)
	}
	if u := string(files["python/pulumi_proxmoxtalos/_utilities.py"]); !strings.Contains(u, `return "`+downloadURL+`"`) {
		t.Errorf("_utilities.py does not pass the plugin download URL with resources")
	}
	for _, p := range []string{"python/README.md", "python/pulumi_proxmoxtalos/py.typed", "python/pulumi_proxmoxtalos/proxmox/toy.py"} {
		if _, ok := files[p]; !ok {
			t.Errorf("missing %s", p)
		}
	}
}

// A Go output-form function with a defaulted input must hand its argument struct to
// InvokeOutput: folded into one output (to apply Defaults()), an argument that is secret
// or comes from a resource makes the Go SDK send no arguments at all. See
// dropFunctionInputDefaults. The other languages keep the default in their docs.
func TestGoFunctionsSendArgumentsWithDefaults(t *testing.T) {
	t.Parallel()
	var spec map[string]any
	if err := json.Unmarshal(fixture(t), &spec); err != nil {
		t.Fatal(err)
	}
	lookup, ok := spec["functions"].(map[string]any)["proxmoxtalos:talos:getLookup"].(map[string]any)
	if !ok {
		t.Fatal("the fixture has no function getLookup; update this test")
	}
	lookup["inputs"].(map[string]any)["properties"].(map[string]any)["arch"] = map[string]any{"type": "string", "default": "amd64"}
	withDefault, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	files, err := generate(withDefault, "go", "v3.259.0")
	if err != nil {
		t.Fatal(err)
	}
	fn := string(files["go/proxmoxtalos/talos/getLookup.go"])
	if !strings.Contains(strings.Join(strings.Fields(fn), " "), "Arch pulumi.StringPtrInput") {
		t.Fatalf("getLookup.go lacks the arch input; files: %v\n%s", slices.Sorted(maps.Keys(files)), fn)
	}
	if strings.Contains(fn, "ToOutputWithContext(ctx.Context(), args)") || strings.Contains(fn, "Defaults()") ||
		!strings.Contains(fn, `ctx.InvokeOutput("proxmoxtalos:talos:getLookup", args,`) {
		t.Errorf("GetLookupOutput does not pass its argument struct to InvokeOutput:\n%s", fn)
	}
	node, err := generate(withDefault, "nodejs", "v3.259.0")
	if err != nil {
		t.Fatal(err)
	}
	if ts := string(node["nodejs/talos/getLookup.ts"]); !strings.Contains(ts, "arch") {
		t.Errorf("the Node.js SDK lost the defaulted input:\n%s", ts)
	}
}

func TestGenerateRefusesBadInput(t *testing.T) {
	t.Parallel()
	if _, err := generate(fixture(t), "cobol", "v3.259.0"); err == nil || !strings.Contains(err.Error(), "unknown language") {
		t.Errorf("unknown language: got %v", err)
	}
	// A resource referring to a type that does not exist fails binding instead of
	// producing an SDK that does not compile.
	bad := strings.Replace(string(fixture(t)), `"#/types/proxmoxtalos:proxmox:Disk"`, `"#/types/proxmoxtalos:proxmox:Nope"`, 1)
	if _, err := generate([]byte(bad), "go", "v3.259.0"); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Errorf("dangling type reference: got %v", err)
	}
}

func TestWriteReplacesGeneratedFilesAndKeepsInstalls(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("nodejs/stale/removed.ts", "old")
	mustWrite("nodejs/node_modules/x/index.js", "installed")
	mustWrite("nodejs/package-lock.json", "{}")
	mustWrite("python/untouched.txt", "another language")

	if err := write(root, "nodejs", map[string][]byte{"nodejs/index.ts": []byte("new")}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"nodejs/stale/removed.ts":        false,
		"nodejs/node_modules/x/index.js": true,
		"nodejs/package-lock.json":       true,
		"nodejs/index.ts":                true,
		"python/untouched.txt":           true,
	} {
		_, err := os.Stat(filepath.Join(root, p))
		if got := err == nil; got != want {
			t.Errorf("%s exists=%v, want %v", p, got, want)
		}
	}
}
