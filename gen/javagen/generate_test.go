package main

import (
	"encoding/xml"
	"os"
	"strings"
	"testing"
)

// The fixture is shared with gen/sdkgen: a toy resource, function and config with the real
// package metadata of provider/languages.go.
func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../sdkgen/testdata/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type pom struct {
	Group       string `xml:"groupId"`
	Artifact    string `xml:"artifactId"`
	Version     string `xml:"version"`
	Description string `xml:"description"`
	Deps        []struct {
		Group    string `xml:"groupId"`
		Artifact string `xml:"artifactId"`
		Version  string `xml:"version"`
	} `xml:"dependencies>dependency"`
}

func TestJavaSDKLayoutAndPom(t *testing.T) {
	t.Parallel()
	files, err := generate(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"src/main/java/com/proxmoxtalos/proxmoxtalos/proxmox/Toy.java",
		"src/main/java/com/proxmoxtalos/proxmoxtalos/talos/TalosFunctions.java",
		"src/main/java/com/proxmoxtalos/proxmoxtalos/Provider.java",
	} {
		if _, ok := files[p]; !ok {
			t.Errorf("missing %s", p)
		}
	}
	if v := string(files["src/main/resources/com/proxmoxtalos/proxmoxtalos/version.txt"]); v != "0.1.0" {
		t.Errorf("version.txt = %q, want the schema version 0.1.0", v)
	}
	for p := range files {
		if strings.HasSuffix(p, ".gradle") {
			t.Errorf("Gradle file %s generated; the SDK builds with Maven", p)
		}
	}
	var got pom
	if err := xml.Unmarshal(files["pom.xml"], &got); err != nil {
		t.Fatalf("pom.xml is not XML: %v", err)
	}
	if got.Group != "com.proxmoxtalos" || got.Artifact != "proxmoxtalos" || got.Version != "0.1.0" {
		t.Errorf("coordinates %s:%s:%s, want com.proxmoxtalos:proxmoxtalos:0.1.0", got.Group, got.Artifact, got.Version)
	}
	deps := map[string]string{}
	for _, d := range got.Deps {
		deps[d.Group+":"+d.Artifact] = d.Version
	}
	if deps["com.pulumi:pulumi"] != "1.16.0" || deps["com.google.code.gson:gson"] == "" {
		t.Errorf("dependencies %v lack the pinned Java SDK or gson", deps)
	}
}

func TestPomEscapesMetadata(t *testing.T) {
	t.Parallel()
	schema := strings.Replace(string(fixture(t)),
		`"description": "Talos Linux Kubernetes clusters`, `"description": "<b>&</b> Talos Linux Kubernetes clusters`, 1)
	files, err := generate([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	var got pom
	if err := xml.Unmarshal(files["pom.xml"], &got); err != nil {
		t.Fatalf("pom.xml with markup in the description is not XML: %v", err)
	}
	if !strings.HasPrefix(got.Description, "<b>&</b> Talos") {
		t.Errorf("description = %q", got.Description)
	}
}
