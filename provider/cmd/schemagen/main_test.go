package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateNeedsVersion(t *testing.T) {
	t.Parallel()
	if _, err := generate(""); err == nil || !strings.Contains(err.Error(), "-version") {
		t.Errorf("generate without a version: %v", err)
	}
}

// The schema carries the package metadata every SDK is named from, and the version given.
func TestSchemaCarriesPackageMetadata(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "schema.json")
	if err := run(out, "9.8.7"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if os.IsNotExist(err) {
		// The provider registers nothing yet: run said so and wrote no schema.
		if _, genErr := generate("9.8.7"); genErr == nil || !strings.Contains(genErr.Error(), errNothingRegistered) {
			t.Fatalf("no schema written, but the provider does not report an empty registry: %v", genErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Name              string                    `json:"name"`
		Version           string                    `json:"version"`
		Repository        string                    `json:"repository"`
		PluginDownloadURL string                    `json:"pluginDownloadURL"`
		Language          map[string]map[string]any `json:"language"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Name != "proxmoxtalos" || spec.Version != "9.8.7" || spec.Repository == "" {
		t.Errorf("schema is %s@%s repository %q", spec.Name, spec.Version, spec.Repository)
	}
	for lang, key := range map[string]string{"go": "importBasePath", "nodejs": "packageName", "python": "packageName", "java": "basePackage"} {
		if spec.Language[lang][key] == nil {
			t.Errorf("schema language.%s.%s is not set", lang, key)
		}
	}
	// Every SDK passes this URL with each resource, so the engine downloads the plugin
	// from the repository's GitHub releases by itself.
	if spec.PluginDownloadURL != "github://api.github.com/proxmoxtalos/proxmoxtalos" {
		t.Errorf("schema pluginDownloadURL is %q, want the GitHub releases of proxmoxtalos/proxmoxtalos", spec.PluginDownloadURL)
	}
}
