package main

import (
	"encoding/json"
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

// pluginInfo is the jar's plugin.json.
type pluginInfo struct {
	Resource bool   `json:"resource"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Server   string `json:"server"`
}

type pom struct {
	Group       string `xml:"groupId"`
	Artifact    string `xml:"artifactId"`
	Version     string `xml:"version"`
	Name        string `xml:"name"`
	Description string `xml:"description"`
	URL         string `xml:"url"`
	Licenses    []struct {
		Name string `xml:"name"`
		URL  string `xml:"url"`
	} `xml:"licenses>license"`
	Developers []struct {
		Name string `xml:"name"`
	} `xml:"developers>developer"`
	SCM struct {
		Connection string `xml:"connection"`
		URL        string `xml:"url"`
	} `xml:"scm"`
	Profiles []struct {
		ID      string   `xml:"id"`
		Plugins []string `xml:"build>plugins>plugin>artifactId"`
	} `xml:"profiles>profile"`
	Deps []struct {
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
	// What Maven Central checks in a POM: name, description, url, license with its URL, a
	// developer, and the SCM; plus the sources and javadoc jars (built in the release profile).
	if got.Name == "" || got.Description == "" || got.URL == "" || len(got.Licenses) != 1 ||
		got.Licenses[0].Name != "Apache-2.0" || got.Licenses[0].URL == "" || len(got.Developers) == 0 ||
		got.Developers[0].Name == "" || got.SCM.Connection != "scm:git:https://github.com/proxmoxtalos/proxmoxtalos.git" || got.SCM.URL == "" {
		t.Errorf("pom.xml lacks what Maven Central requires: %+v", got)
	}
	if len(got.Profiles) != 1 || got.Profiles[0].ID != "release" ||
		strings.Join(got.Profiles[0].Plugins, ",") != "maven-source-plugin,maven-javadoc-plugin" {
		t.Errorf("pom.xml has no release profile building sources and javadoc jars: %+v", got.Profiles)
	}
	var plugin pluginInfo
	want := pluginInfo{true, "proxmoxtalos", "0.1.0", "github://api.github.com/proxmoxtalos/proxmoxtalos"}
	if err := json.Unmarshal(files["src/main/resources/com/proxmoxtalos/proxmoxtalos/plugin.json"], &plugin); err != nil || plugin != want {
		t.Errorf("plugin.json (read by the Java language host) is %+v, %v; want %+v", plugin, err, want)
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
