package version

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Where the examples name our own package's version. Each pattern captures the version.
var versionPins = map[string]*regexp.Regexp{
	"plugin install":    regexp.MustCompile(`pulumi plugin install resource proxmoxtalos (\S+)`),
	"npm tarball":       regexp.MustCompile(`proxmoxtalos-proxmoxtalos-([0-9][^/\s]*?)\.tgz`),
	"npm dependency":    regexp.MustCompile(`"@proxmoxtalos/proxmoxtalos":\s*"([^"]+)"`),
	"pip requirement":   regexp.MustCompile(`pulumi_proxmoxtalos\s*==\s*([0-9][^\s,;]*)`),
	"maven dependency":  regexp.MustCompile(`<artifactId>proxmoxtalos</artifactId>\s*<version>([^<]+)</version>`),
	"go module version": regexp.MustCompile(`github\.com/proxmoxtalos/proxmoxtalos/sdk (v[0-9][^\s]*)`),
}

// findPins returns the versions that each kind of pin in text names.
func findPins(text string) map[string][]string {
	pins := map[string][]string{}
	for kind, re := range versionPins {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			pins[kind] = append(pins[kind], m[1])
		}
	}
	return pins
}

// Every pin of the package's own version in the examples (package.json, requirements.txt,
// pom.xml, Pulumi.yaml comments, READMEs) is the one in ./VERSION, the single source that the
// binary, the schema and the SDKs are built from.
func TestExamplesPinTheVersionFile(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(b))
	seen := map[string]int{}
	err = filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "target", "venv", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		switch name := d.Name(); {
		case name == "package.json", name == "requirements.txt", name == "pom.xml", name == "go.mod",
			strings.HasSuffix(name, ".md"), strings.HasPrefix(name, "Pulumi.") && strings.HasSuffix(name, ".yaml"):
		default:
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for kind, versions := range findPins(string(text)) {
			for _, v := range versions {
				seen[kind]++
				// The Go examples take the SDK through a replace directive: v0.0.0 is a placeholder.
				if kind == "go module version" && v == "v0.0.0" {
					continue
				}
				if strings.TrimPrefix(v, "v") != want {
					t.Errorf("%s: %s pins %s, but VERSION is %s", rel, kind, v, want)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The patterns still find what they were written for (a renamed file or reworded README
	// would otherwise make this test pass without checking anything).
	for _, kind := range []string{"plugin install", "npm tarball", "npm dependency", "maven dependency"} {
		if seen[kind] == 0 {
			t.Errorf("no %s pin found in examples/: update versionPins", kind)
		}
	}
}

func TestFindPins(t *testing.T) {
	t.Parallel()
	text := `pulumi plugin install resource proxmoxtalos 1.2.3 --file x
npm install /tmp/proxmoxtalos-proxmoxtalos-1.2.4.tgz
"@proxmoxtalos/proxmoxtalos": "1.2.5",
pulumi_proxmoxtalos==1.2.6
pulumi_proxmoxtalos==<version>
<artifactId>proxmoxtalos</artifactId>
            <version>1.2.7</version>`
	got := findPins(text)
	for kind, want := range map[string]string{"plugin install": "1.2.3", "npm tarball": "1.2.4", "npm dependency": "1.2.5",
		"pip requirement": "1.2.6", "maven dependency": "1.2.7"} {
		if len(got[kind]) != 1 || got[kind][0] != want {
			t.Errorf("%s: found %v, want [%s]", kind, got[kind], want)
		}
	}
}
