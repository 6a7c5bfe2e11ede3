// Package docs holds the documentation the schema carries for each resource, function and the
// component: its description, a Markdown file named by its token (<module>/<Name>.md, read by
// Description from each Annotate), and example programs in every SDK language and YAML, one
// folder per program under examples/, rendered after the descriptions of the resources and
// functions they show, in the shortcode layout Pulumi's docs generator and SDK generators read
// ({{% examples %}}: the Registry shows every language, each SDK keeps its own). The programs
// are the checked ones: make test type-checks each language against the SDK packages
// (docs_test.go checks the YAML against the schema), so no example is typed twice.
package docs

import (
	"embed"
	"fmt"
	"regexp"
	"strings"
)

// all: because the Python programs are named __main__.py.
//
//go:embed all:examples
var files embed.FS

// Example is one program under examples/.
type Example struct {
	Dir   string // folder under examples/
	Title string // the heading the Registry shows
}

// The programs, by the token of every resource and function they show.
var (
	cluster   = Example{"cluster", "A highly available cluster: three control planes behind a VIP and a worker pool"}
	talosVM   = Example{"vm", "A VM booting the Talos nocloud ISO of an Image Factory schematic, with its address from cloud-init"}
	talosNode = Example{"talos-node", "A single-node cluster from the low-level Talos resources"}
)

// Examples maps a schema token to the programs shown with it.
var Examples = map[string][]Example{
	"proxmoxtalos:index:TalosCluster":            {cluster},
	"proxmoxtalos:talos:ImageFactorySchematic":   {talosVM},
	"proxmoxtalos:proxmox:DownloadFile":          {talosVM},
	"proxmoxtalos:proxmox:VirtualMachine":        {talosVM},
	"proxmoxtalos:talos:MachineSecrets":          {talosNode},
	"proxmoxtalos:talos:ConfigurationApply":      {talosNode},
	"proxmoxtalos:talos:Bootstrap":               {talosNode},
	"proxmoxtalos:talos:Kubeconfig":              {talosNode},
	"proxmoxtalos:talos:ClusterHealth":           {talosNode},
	"proxmoxtalos:talos:ControlPlaneComponents":  {talosNode},
	"proxmoxtalos:talos:getMachineConfiguration": {talosNode},
	"proxmoxtalos:talos:getClientConfiguration":  {talosNode},
	"proxmoxtalos:talos:getImageFactory":         {talosNode},
}

// Languages are the files of each program, in the order the Registry shows them, with the
// fence language each SDK generator keeps.
var Languages = []struct{ File, Fence string }{
	{"index.ts", "typescript"},
	{"__main__.py", "python"},
	{"main.go", "go"},
	{"App.java", "java"},
	{"Pulumi.yaml", "yaml"},
}

// Render returns the "Example Usage" section for the given programs.
func Render(examples []Example) (string, error) {
	var b strings.Builder
	b.WriteString("{{% examples %}}\n## Example Usage\n")
	for _, ex := range examples {
		fmt.Fprintf(&b, "{{%% example %%}}\n### %s\n", ex.Title)
		for _, l := range Languages {
			src, err := files.ReadFile("examples/" + ex.Dir + "/" + l.File)
			if err != nil {
				return "", fmt.Errorf("example %s has no %s program: %w", ex.Dir, l.Fence, err)
			}
			fmt.Fprintf(&b, "\n```%s\n%s\n```\n", l.Fence, strings.TrimSpace(shown(l.Fence, string(src))))
		}
		b.WriteString("{{% /example %}}\n")
	}
	b.WriteString("{{% /examples %}}")
	return b.String(), nil
}

var (
	// The Go programs carry `//go:build ignore` so that the root module (which does not
	// require the SDK module) and its `go mod tidy` leave them alone; make test vets them
	// by file name, which builds a named file whatever its constraint.
	goBuildTag = regexp.MustCompile(`(?m)\A//go:build ignore\n\n`)
	// A YAML program's project keys; the Registry shows the program from resources: on.
	yamlProject = regexp.MustCompile(`(?m)^(name|runtime|description): .*\n`)
	// Each Java program has a package of its own so that they compile together.
	javaPackage = regexp.MustCompile(`(?m)\Apackage [a-z_.]+;\n\n`)
)

// shown is the part of a program a reader needs.
func shown(fence, src string) string {
	switch fence {
	case "go":
		return goBuildTag.ReplaceAllString(src, "")
	case "yaml":
		return yamlProject.ReplaceAllString(src, "")
	case "java":
		return javaPackage.ReplaceAllString(src, "")
	}
	return src
}
