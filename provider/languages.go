package provider

// Package-level SDK settings: names and dependency pins of every generated SDK, in one place.
// The SDK generators (gen/sdkgen, gen/javagen) read them from schema/schema.json.
const (
	// GoImportBase is the Go SDK's import path; its module (sdk/go.mod) is one level up so
	// users can import the SDK without pulling in the provider.
	GoImportBase = "github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos"
	// NodePackage is the npm package name, scoped like other Pulumi community packages.
	NodePackage = "@proxmoxtalos/proxmoxtalos"
	// PythonPackage is the Python distribution and import name.
	PythonPackage = "pulumi_proxmoxtalos"
	// JavaBasePackage + "." + Name is the Java package: com.proxmoxtalos.proxmoxtalos.
	JavaBasePackage = "com.proxmoxtalos"

	// Language SDK versions the generated SDKs depend on. They match the Pulumi engine the
	// project builds against (go.mod, tools/go.mod). Lockfiles/constraints pin exactly.
	pulumiNodeSDK   = "^3.270.0"
	pulumiPythonSDK = ">=3.272.0,<4.0.0"
	pulumiJavaSDK   = "1.36.1"
	typescript      = "5.9.3"
)

func languageMap() map[string]any {
	return map[string]any{
		"go": map[string]any{
			"importBasePath":                 GoImportBase,
			"generateResourceContainerTypes": true,
			"respectSchemaVersion":           true,
		},
		"nodejs": map[string]any{
			"packageName":          NodePackage,
			"packageDescription":   nodeDescription,
			"readme":               nodeReadme,
			"respectSchemaVersion": true,
			"typescriptVersion":    typescript,
			"dependencies":         map[string]string{"@pulumi/pulumi": pulumiNodeSDK},
		},
		"python": map[string]any{
			"packageName":          PythonPackage,
			"readme":               pythonReadme,
			"respectSchemaVersion": true,
			"pythonRequires":       ">=3.10", // pulumi 3.272.0 on PyPI: Requires-Python >=3.10
			"requires":             map[string]string{"pulumi": pulumiPythonSDK},
			"pyproject":            map[string]any{"enabled": true},
		},
		"java": map[string]any{
			"basePackage":  JavaBasePackage,
			"buildFiles":   "none", // gen/javagen writes a Maven pom.xml instead of Gradle files
			"dependencies": map[string]string{"com.pulumi:pulumi": pulumiJavaSDK},
		},
	}
}
