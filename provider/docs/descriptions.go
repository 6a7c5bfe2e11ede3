package docs

import (
	"embed"
	"fmt"
	"strings"
)

// The description of every resource, function and the component, one Markdown file each,
// named by its token: <module>/<Name>.md (talos/ConfigurationApply.md,
// talos/getMachineConfiguration.md, index/TalosCluster.md). The schema carries the text as
// written, then the example programs (Render).
//
//go:embed index proxmox talos
var descriptions embed.FS

// Description is the Markdown description of the schema token ("proxmoxtalos:talos:Bootstrap"),
// without its final newline. A token without a file is a programming error that every schema
// test finds: it panics, naming the file to write.
func Description(token string) string {
	file, err := descriptionFile(token)
	if err == nil {
		var text []byte
		if text, err = descriptions.ReadFile(file); err == nil {
			return strings.TrimRight(string(text), "\n")
		}
	}
	panic(fmt.Sprintf("docs: no description for %s: %v", token, err))
}

// descriptionFile is the file a token's description lives in.
func descriptionFile(token string) (string, error) {
	parts := strings.Split(token, ":")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return "", fmt.Errorf("%q is not a schema token like proxmoxtalos:talos:Bootstrap", token)
	}
	return parts[1] + "/" + parts[2] + ".md", nil
}

// Described lists the tokens of package pkg ("proxmoxtalos") that have a description file, so
// that a test can find a file no resource or function uses.
func Described(pkg string) []string {
	var tokens []string
	for _, module := range []string{"index", "proxmox", "talos"} {
		entries, err := descriptions.ReadDir(module)
		if err != nil {
			panic(err) // embedded above
		}
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), ".md"); ok && !e.IsDir() {
				tokens = append(tokens, pkg+":"+module+":"+name)
			}
		}
	}
	return tokens
}
