package docs

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Every program renders, in every language, without the lines only the checks need.
func TestRenderEveryExample(t *testing.T) {
	t.Parallel()
	for tok, examples := range Examples {
		section, err := Render(examples)
		if err != nil {
			t.Fatalf("%s: %v", tok, err)
		}
		for _, l := range Languages {
			if !strings.Contains(section, "```"+l.Fence+"\n") {
				t.Errorf("%s: no %s block", tok, l.Fence)
			}
		}
		for _, leftover := range []string{"//go:build", "\nruntime: yaml", "package examples"} {
			if strings.Contains(section, leftover) {
				t.Errorf("%s: the rendered section still has %q", tok, leftover)
			}
		}
		if !strings.HasPrefix(section, "{{% examples %}}\n## Example Usage\n{{% example %}}\n### ") ||
			!strings.HasSuffix(section, "{{% /example %}}\n{{% /examples %}}") {
			t.Errorf("%s: not in the Registry's examples layout:\n%s", tok, section)
		}
	}
}

// The YAML programs have no compiler: check them against the package schema as the YAML
// language host would (types, property names, required inputs, enum values, and the
// outputs that ${...} references read).
func TestYAMLExamplesMatchTheSchema(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../schema/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s schemaSpec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	dirs, err := files.ReadDir("examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		src, err := files.ReadFile("examples/" + d.Name() + "/Pulumi.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range checkYAML(&s, src) {
			t.Errorf("examples/%s/Pulumi.yaml: %s", d.Name(), p)
		}
	}
}

// A mistake of each kind is found (the check can fail).
func TestYAMLCheckFindsMistakes(t *testing.T) {
	t.Parallel()
	s := schemaSpec{
		Resources: map[string]schemaResource{"p:m:R": {
			InputProperties: map[string]schemaProp{"size": {Type: "integer"}, "kind": {Ref: "#/types/p:m:Kind"}},
			Properties:      map[string]schemaProp{"id2": {Type: "string"}},
			RequiredInputs:  []string{"size"},
		}},
		Types: map[string]schemaType{"p:m:Kind": {Type: "string", Enum: []struct {
			Value any `json:"value"`
		}{{"a"}}}},
	}
	for program, want := range map[string]string{
		"resources: {r: {type: p:m:Q, properties: {size: 1}}}":                             "unknown resource type p:m:Q",
		"resources: {r: {type: p:m:R, properties: {}}}":                                    "required input size",
		"resources: {r: {type: p:m:R, properties: {size: 1, colour: 2}}}":                  "r.colour",
		"resources: {r: {type: p:m:R, properties: {size: one}}}":                           "r.size",
		"resources: {r: {type: p:m:R, properties: {size: 1, kind: b}}}":                    "r.kind",
		"resources: {r: {type: p:m:R, properties: {size: 1}}}\noutputs:\n  o: ${r.nope}\n": "r has no output nope",
	} {
		got := strings.Join(checkYAML(&s, []byte(program)), "\n")
		if !strings.Contains(got, want) {
			t.Errorf("%s: problems %q, want one with %q", program, got, want)
		}
	}
}

type schemaProp struct {
	Type                 string      `json:"type"`
	Ref                  string      `json:"$ref"`
	Items                *schemaProp `json:"items"`
	AdditionalProperties *schemaProp `json:"additionalProperties"`
}

type schemaType struct {
	Type       string                `json:"type"`
	Properties map[string]schemaProp `json:"properties"`
	Required   []string              `json:"required"`
	Enum       []struct {
		Value any `json:"value"`
	} `json:"enum"`
}

type schemaResource struct {
	InputProperties map[string]schemaProp `json:"inputProperties"`
	Properties      map[string]schemaProp `json:"properties"`
	RequiredInputs  []string              `json:"requiredInputs"`
}

type schemaSpec struct {
	Resources map[string]schemaResource `json:"resources"`
	Functions map[string]struct {
		Inputs  schemaType `json:"inputs"`
		Outputs schemaType `json:"outputs"`
	} `json:"functions"`
	Types map[string]schemaType `json:"types"`
}

type yamlProgram struct {
	Variables map[string]any `yaml:"variables"`
	Resources map[string]struct {
		Type       string         `yaml:"type"`
		Properties map[string]any `yaml:"properties"`
	} `yaml:"resources"`
}

var reference = regexp.MustCompile(`\$\{([A-Za-z0-9_-]+)\.([A-Za-z0-9_]+)`)

// checkYAML lists what the YAML language host would refuse in a program.
func checkYAML(s *schemaSpec, src []byte) []string {
	var prog yamlProgram
	if err := yaml.Unmarshal(src, &prog); err != nil {
		return []string{err.Error()}
	}
	var probs []string
	outputs := map[string]map[string]schemaProp{}
	for name, r := range prog.Resources {
		typ := r.Type
		if parts := strings.Split(typ, ":"); len(parts) == 2 { // pkg:Type is pkg:index:Type
			typ = parts[0] + ":index:" + parts[1]
		}
		res, ok := s.Resources[typ]
		if !ok {
			probs = append(probs, fmt.Sprintf("%s: unknown resource type %s", name, r.Type))
			continue
		}
		outputs[name] = res.Properties
		probs = append(probs, checkObject(s, name, r.Properties, res.InputProperties, res.RequiredInputs)...)
	}
	for name, v := range prog.Variables {
		m, _ := v.(map[string]any)
		invoke, ok := m["fn::invoke"].(map[string]any)
		if !ok {
			continue // a plain value
		}
		token, _ := invoke["function"].(string)
		fn, ok := s.Functions[token]
		if !ok {
			probs = append(probs, fmt.Sprintf("%s: unknown function %q", name, token))
			continue
		}
		outputs[name] = fn.Outputs.Properties
		args, _ := invoke["arguments"].(map[string]any)
		probs = append(probs, checkObject(s, name, args, fn.Inputs.Properties, fn.Inputs.Required)...)
	}
	for _, m := range reference.FindAllStringSubmatch(string(src), -1) {
		props, ok := outputs[m[1]]
		if _, has := props[m[2]]; ok && !has && m[2] != "id" && m[2] != "urn" {
			probs = append(probs, fmt.Sprintf("${%s.%s}: %s has no output %s", m[1], m[2], m[1], m[2]))
		}
	}
	sort.Strings(probs)
	return probs
}

func checkObject(s *schemaSpec, at string, values map[string]any, props map[string]schemaProp, required []string) []string {
	var probs []string
	for _, r := range required {
		if _, ok := values[r]; !ok {
			probs = append(probs, fmt.Sprintf("%s: required input %s is missing", at, r))
		}
	}
	for k, v := range values {
		p, ok := props[k]
		if !ok {
			probs = append(probs, fmt.Sprintf("%s.%s: no such input", at, k))
			continue
		}
		probs = append(probs, checkValue(s, at+"."+k, v, p)...)
	}
	return probs
}

func checkValue(s *schemaSpec, at string, v any, p schemaProp) []string {
	if str, ok := v.(string); ok && strings.HasPrefix(str, "${") {
		return nil // an output of another resource: typed at run time
	}
	if p.Ref != "" {
		t, ok := s.Types[strings.TrimPrefix(p.Ref, "#/types/")]
		if !ok {
			return nil // a Pulumi built-in type (Any, Archive...)
		}
		if len(t.Enum) > 0 {
			for _, e := range t.Enum {
				if fmt.Sprint(e.Value) == fmt.Sprint(v) {
					return nil
				}
			}
			return []string{fmt.Sprintf("%s: %v is not one of the enum's values", at, v)}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %T", at, v)}
		}
		return checkObject(s, at, obj, t.Properties, t.Required)
	}
	switch p.Type {
	case "array":
		list, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want a list, got %T", at, v)}
		}
		var probs []string
		for i, e := range list {
			probs = append(probs, checkValue(s, fmt.Sprintf("%s[%d]", at, i), e, *p.Items)...)
		}
		return probs
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want a map, got %T", at, v)}
		}
		var probs []string
		for k, e := range obj {
			if p.AdditionalProperties != nil {
				probs = append(probs, checkValue(s, at+"."+k, e, *p.AdditionalProperties)...)
			}
		}
		return probs
	case "string", "integer", "number", "boolean":
		want := map[string][]string{"string": {"string"}, "integer": {"int"}, "number": {"int", "float64"}, "boolean": {"bool"}}[p.Type]
		if !slices.Contains(want, fmt.Sprintf("%T", v)) {
			return []string{fmt.Sprintf("%s: want a %s, got %v", at, p.Type, v)}
		}
	}
	return nil
}

// The YAML programs written into the descriptions (a second scenario beside the example
// programs, such as VirtualMachine's disk image through a template) are checked the same way.
func TestYAMLInDescriptionsMatchesTheSchema(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../schema/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s schemaSpec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, dir := range []string{"index", "proxmox", "talos"} {
		entries, err := descriptions.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			text, err := descriptions.ReadFile(dir + "/" + e.Name())
			if err != nil {
				t.Fatal(err)
			}
			for _, block := range strings.Split(string(text), "```yaml\n")[1:] {
				src, _, _ := strings.Cut(block, "```")
				if !strings.Contains(src, "resources:") {
					continue
				}
				checked++
				for _, p := range checkYAML(&s, []byte(src)) {
					t.Errorf("%s/%s: %s", dir, e.Name(), p)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no YAML program found in the descriptions: the check reads nothing")
	}
}
