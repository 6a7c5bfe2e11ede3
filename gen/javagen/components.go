package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// Components with secret outputs (TalosCluster) need one fix after pulumi-java's generator.
//
// The generator (pulumi-java/pkg v1.16.0; v1.17.0, the newest on the Go module proxy, is the
// same) writes `.additionalSecretOutputs(List.of(...))` into every resource's default options,
// for a component on ComponentResourceOptions.Builder. No com.pulumi:pulumi release on Maven
// Central has that method (checked with javap: 1.16.0 up to 1.20.0 and 1.36.1; only
// CustomResourceOptions.Builder has it; pulumi/pulumi#11545 asks for it), so the SDK does not
// compile. The option would do nothing for a component anyway: the engine ignores
// additionalSecretOutputs on components (pkg/resource/deploy/source_eval.go in pulumi v3.259.0,
// "component resources ignore these options", pulumi/pulumi#9704); these outputs are secret
// because the provider's Construct returns them as secrets (provider/cluster: pulumi.ToSecret,
// tested in component_test.go).
//
// So for each component we drop that call and, as the Java equivalent, make each secret output's
// getter return it `.asSecret()`: a Java program sees them as secret whatever the engine returns.
// Everything else stays as generated; custom resources keep their additionalSecretOutputs.

// secretOptionCall matches the generator's additionalSecretOutputs call, one name per line.
var secretOptionCall = regexp.MustCompile(`(?m)^ *\.additionalSecretOutputs\(List\.of\(\n((?: *"[^"\n]*",?\n)+) *\)\)\n`)

// fixComponentSecrets applies the fix above to files (the generator's output) in place.
func fixComponentSecrets(pkg *schema.Package, files map[string][]byte) error {
	for _, r := range pkg.Resources {
		if !r.IsComponent {
			continue
		}
		var secrets []string
		for _, p := range r.Properties {
			if p.Secret {
				secrets = append(secrets, p.Name)
			}
		}
		if len(secrets) == 0 {
			continue
		}
		path, err := resourceFile(files, r.Token)
		if err != nil {
			return err
		}
		src, err := secureComponent(string(files[path]), secrets)
		if err != nil {
			return fmt.Errorf("component %s (%s): %w; check gen/javagen/components.go against the pulumi-java generator's output",
				r.Token, path, err)
		}
		files[path] = []byte(src)
	}
	return nil
}

// resourceFile finds the generated class of the resource with the given token.
func resourceFile(files map[string][]byte, token string) (string, error) {
	annotation := fmt.Sprintf("@ResourceType(type=%q)\n", token)
	var found []string
	for p, b := range files {
		if strings.HasSuffix(p, ".java") && strings.Contains(string(b), annotation) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		sort.Strings(found)
		return "", fmt.Errorf("want one generated Java class for %s, found %d: %v", token, len(found), found)
	}
	return found[0], nil
}

// secureComponent rewrites one component class: no additionalSecretOutputs call (it must list
// exactly the secret outputs), and each secret output's getter returns the output as secret.
func secureComponent(src string, secrets []string) (string, error) {
	calls := secretOptionCall.FindAllStringSubmatch(src, -1)
	if len(calls) != 1 {
		return "", fmt.Errorf("want one .additionalSecretOutputs(List.of(...)) call, found %d", len(calls))
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(calls[0][1]), "\n") {
		listed = append(listed, strings.Trim(strings.TrimSpace(line), `",`))
	}
	sort.Strings(listed)
	want := append([]string(nil), secrets...)
	sort.Strings(want)
	if strings.Join(listed, ",") != strings.Join(want, ",") {
		return "", fmt.Errorf("additionalSecretOutputs lists %v, the schema's secret outputs are %v", listed, want)
	}
	src = secretOptionCall.ReplaceAllLiteralString(src, "")

	for _, name := range secrets {
		field, err := exportedField(src, name)
		if err != nil {
			return "", err
		}
		// The getter's one statement: `return this.f;` or `return Codegen.optional(this.f);`.
		ret := regexp.MustCompile(`(?m)^( +return .*\bthis\.` + regexp.QuoteMeta(field) + `)\b(.*;)$`)
		if n := len(ret.FindAllString(src, -1)); n != 1 {
			return "", fmt.Errorf("want one getter returning this.%s (output %q), found %d", field, name, n)
		}
		src = ret.ReplaceAllString(src, "${1}.asSecret()${2}")
	}
	return src, nil
}

// exportedField is the Java field that holds the output with the given wire name.
func exportedField(src, name string) (string, error) {
	re := regexp.MustCompile(`@Export\(name=` + regexp.QuoteMeta(fmt.Sprintf("%q", name)) + `[^\n]*\n +private Output<.*> (\w+);\n`)
	m := re.FindAllStringSubmatch(src, -1)
	if len(m) != 1 {
		return "", fmt.Errorf("want one @Export field for output %q, found %d", name, len(m))
	}
	return m[0][1], nil
}
