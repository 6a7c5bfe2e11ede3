package provider

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"gopkg.in/yaml.v3"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
)

// Just the parts of the package schema these tests read.
type schemaProp struct {
	Description          string      `json:"description"`
	Ref                  string      `json:"$ref"`
	Type                 string      `json:"type"`
	Items                *schemaProp `json:"items"`
	AdditionalProperties *schemaProp `json:"additionalProperties"`
}

type schemaObject struct {
	Description string                `json:"description"`
	Properties  map[string]schemaProp `json:"properties"`
	Enum        []struct {
		Value       any    `json:"value"`
		Description string `json:"description"`
	} `json:"enum"`
}

type schemaResource struct {
	Description     string                `json:"description"`
	IsComponent     bool                  `json:"isComponent"`
	InputProperties map[string]schemaProp `json:"inputProperties"`
	Properties      map[string]schemaProp `json:"properties"`
}

type schemaFunction struct {
	Description string        `json:"description"`
	Inputs      *schemaObject `json:"inputs"`
	Outputs     *schemaObject `json:"outputs"`
}

type packageSchema struct {
	Name      string                    `json:"name"`
	Resources map[string]schemaResource `json:"resources"`
	Functions map[string]schemaFunction `json:"functions"`
	Types     map[string]schemaObject   `json:"types"`
	Config    struct {
		Variables map[string]schemaProp `json:"variables"`
	} `json:"config"`
}

func loadSchema(t *testing.T) packageSchema {
	t.Helper()
	resp, err := server(t).GetSchema(p.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var s packageSchema
	if err := json.Unmarshal([]byte(resp.Schema), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Every resource, function, type, property and enum value is documented: the descriptions are
// what every SDK's docs and IDE hovers show.
func TestSchemaDescribesEverything(t *testing.T) {
	t.Parallel()
	missing := undocumented(loadSchema(t))
	if len(missing) > 0 {
		t.Errorf("%d schema entries have no description (add one with Annotate):\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}
}

// undocumented lists every schema entry without a description.
func undocumented(s packageSchema) []string {
	var missing []string
	blank := func(d string) bool { return strings.TrimSpace(d) == "" }
	props := func(where string, ps map[string]schemaProp) {
		for name, prop := range ps {
			if blank(prop.Description) {
				missing = append(missing, where+"."+name)
			}
		}
	}
	for tok, r := range s.Resources {
		if blank(r.Description) {
			missing = append(missing, "resource "+tok)
		}
		props("resource "+tok+" input", r.InputProperties)
		props("resource "+tok+" output", r.Properties)
	}
	for tok, f := range s.Functions {
		if blank(f.Description) {
			missing = append(missing, "function "+tok)
		}
		if f.Inputs != nil {
			props("function "+tok+" input", f.Inputs.Properties)
		}
		if f.Outputs != nil {
			props("function "+tok+" output", f.Outputs.Properties)
		}
	}
	for tok, ty := range s.Types {
		if blank(ty.Description) {
			missing = append(missing, "type "+tok)
		}
		props("type "+tok, ty.Properties)
		for _, e := range ty.Enum {
			if blank(e.Description) {
				missing = append(missing, fmt.Sprintf("enum value %s = %v", tok, e.Value))
			}
		}
	}
	props("config", s.Config.Variables)
	sort.Strings(missing)
	return missing
}

// Issue 16: values the provider derives for previews are outputs, never inputs that every SDK
// would offer and the user must leave unset (framework.OutputsOnly, talos.PreviewOutputs).
func TestSchemaHasNoInputsToLeaveUnset(t *testing.T) {
	t.Parallel()
	s := loadSchema(t)
	for tok, r := range s.Resources {
		for name, prop := range r.InputProperties {
			d := strings.ToLower(prop.Description)
			if strings.Contains(d, "leave unset") || strings.Contains(d, "computed by the provider") {
				t.Errorf("resource %s input %s reads as a value the provider computes: %q", tok, name, prop.Description)
			}
		}
	}
	derived := map[string][]string{
		"proxmoxtalos:talos:ConfigurationApply":     {"configView", "configChange"},
		"proxmoxtalos:talos:ClusterHealth":          {"requires"},
		"proxmoxtalos:talos:ControlPlaneComponents": {"change"},
	}
	for tok, names := range derived {
		r := s.Resources[tok]
		for _, name := range names {
			if _, in := r.InputProperties[name]; in {
				t.Errorf("%s.%s is an input", tok, name)
			}
			if _, out := r.Properties[name]; !out {
				t.Errorf("%s.%s is not an output", tok, name)
			}
		}
	}
}

// Every resource's, function's and the component's description is a Markdown file in
// provider/docs (docs.Description), and every such file describes one of them.
func TestDescriptionsAreMarkdownFiles(t *testing.T) {
	t.Parallel()
	s := loadSchema(t)
	files := map[string]bool{}
	for _, tok := range docs.Described(s.Name) {
		files[tok] = true
	}
	check := func(tok, description string) {
		if !files[tok] {
			t.Errorf("%s has no description file in provider/docs", tok)
		} else if !strings.HasPrefix(description, docs.Description(tok)) {
			t.Errorf("%s: the schema's description does not start with its provider/docs file", tok)
		}
		delete(files, tok)
	}
	for tok, r := range s.Resources {
		check(tok, r.Description)
	}
	for tok, f := range s.Functions {
		check(tok, f.Description)
	}
	for tok := range files {
		t.Errorf("provider/docs describes %s, which the schema does not have", tok)
	}
}

func TestUndocumentedFindsGaps(t *testing.T) {
	t.Parallel()
	var s packageSchema
	s.Types = map[string]schemaObject{"pkg:m:T": {Description: "a type", Properties: map[string]schemaProp{"x": {}}}}
	s.Types["pkg:m:E"] = schemaObject{Enum: []struct {
		Value       any    `json:"value"`
		Description string `json:"description"`
	}{{Value: "a"}}}
	got := strings.Join(undocumented(s), ";")
	want := "enum value pkg:m:E = a;type pkg:m:E;type pkg:m:T.x"
	if got != want {
		t.Errorf("undocumented = %q, want %q", got, want)
	}
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// Every ```yaml example in a description is a Pulumi YAML program that parses, and names only
// types, functions and properties the schema has: examples are what users copy first.
func TestSchemaYAMLExamplesMatchTheSchema(t *testing.T) {
	t.Parallel()
	s := loadSchema(t)
	var docs []string // "where\x00text"
	for tok, r := range s.Resources {
		docs = append(docs, "resource "+tok+"\x00"+r.Description)
	}
	for tok, f := range s.Functions {
		docs = append(docs, "function "+tok+"\x00"+f.Description)
	}
	for tok, ty := range s.Types {
		docs = append(docs, "type "+tok+"\x00"+ty.Description)
	}
	sort.Strings(docs)
	examples := 0
	for _, doc := range docs {
		where, text, _ := strings.Cut(doc, "\x00")
		for i, m := range yamlBlock.FindAllStringSubmatch(text, -1) {
			examples++
			for _, problem := range checkExample(s, m[1]) {
				t.Errorf("%s, example %d: %s", where, i+1, problem)
			}
		}
	}
	if examples < 5 {
		t.Errorf("found %d yaml examples in the schema; the main resources should each have one", examples)
	}
}

func TestCheckExampleCatchesMistakes(t *testing.T) {
	t.Parallel()
	s := packageSchema{Name: "pkg", Resources: map[string]schemaResource{
		"pkg:index:Top": {InputProperties: map[string]schemaProp{"inner": {Ref: "#/types/pkg:index:Inner"}}},
		"pkg:m:R":       {InputProperties: map[string]schemaProp{"content": {Type: "string"}}},
	}, Functions: map[string]schemaFunction{
		"pkg:m:getF": {Inputs: &schemaObject{Properties: map[string]schemaProp{"arch": {Type: "string"}}}},
	}, Types: map[string]schemaObject{
		"pkg:index:Inner": {Properties: map[string]schemaProp{"count": {Type: "integer"}}},
	}}
	for name, c := range map[string]struct {
		yaml string
		want string // "" means no problem
	}{
		"good":              {"resources:\n  a:\n    type: pkg:m:R\n    properties:\n      content: iso\n    options:\n      dependsOn:\n        - ${b}\n", ""},
		"short index token": {"resources:\n  a:\n    type: pkg:Top\n    properties:\n      inner: { count: 1 }\n", ""},
		"flow list of interpolation": {"resources:\n  a:\n    type: pkg:m:R\n    options:\n      dependsOn: [${b}]\n",
			"does not parse"},
		"unknown property":  {"resources:\n  a:\n    type: pkg:m:R\n    properties:\n      contentType: iso\n", `"contentType"`},
		"unknown type":      {"resources:\n  a:\n    type: pkg:m:Nope\n", `"pkg:m:Nope"`},
		"nested property":   {"resources:\n  a:\n    type: pkg:Top\n    properties:\n      inner: { cnt: 1 }\n", `"cnt"`},
		"unknown option":    {"resources:\n  a:\n    type: pkg:m:R\n    options:\n      dependOn: [a]\n", `"dependOn"`},
		"function argument": {"variables:\n  f:\n    fn::invoke:\n      function: pkg:m:getF\n      arguments:\n        architecture: amd64\n", `"architecture"`},
		"unknown function":  {"variables:\n  f:\n    fn::invoke:\n      function: pkg:m:getG\n", `"pkg:m:getG"`},
	} {
		problems := strings.Join(checkExample(s, c.yaml), "; ")
		if c.want == "" && problems != "" {
			t.Errorf("%s: unexpected problems: %s", name, problems)
		}
		if c.want != "" && !strings.Contains(problems, c.want) {
			t.Errorf("%s: problems %q do not mention %s", name, problems, c.want)
		}
	}
}

// Resource options a Pulumi YAML program may set (pulumi-yaml v1.38.3 pkg/pulumiyaml/ast/template.go,
// ResourceOptionsDecl).
var yamlResourceOptions = map[string]bool{
	"additionalSecretOutputs": true, "aliases": true, "customTimeouts": true, "deleteBeforeReplace": true,
	"dependsOn": true, "ignoreChanges": true, "import": true, "parent": true, "protect": true,
	"provider": true, "providers": true, "version": true, "pluginDownloadURL": true,
	"replaceOnChanges": true, "retainOnDelete": true, "deletedWith": true, "hideDiffs": true,
	"replaceWith": true, "replacementTrigger": true, "envVarMappings": true,
}

// checkExample parses one Pulumi YAML program and returns what in it the schema does not have.
func checkExample(s packageSchema, text string) []string {
	var prog struct {
		Resources map[string]struct {
			Type       string         `yaml:"type"`
			Properties map[string]any `yaml:"properties"`
			Options    map[string]any `yaml:"options"`
		} `yaml:"resources"`
		Variables map[string]any `yaml:"variables"`
	}
	if err := yaml.Unmarshal([]byte(text), &prog); err != nil {
		return []string{fmt.Sprintf("does not parse as YAML: %v", err)}
	}
	var problems []string
	for name, r := range prog.Resources {
		if r.Type == "" {
			problems = append(problems, fmt.Sprintf("resource %s has no type", name))
			continue
		}
		res, ok := s.Resources[s.fullToken(r.Type)]
		if !ok {
			problems = append(problems, fmt.Sprintf("resource %s: type %q is not in the schema", name, r.Type))
			continue
		}
		problems = append(problems, s.checkObject("resource "+name, r.Properties, res.InputProperties)...)
		for opt := range r.Options {
			if !yamlResourceOptions[opt] {
				problems = append(problems, fmt.Sprintf("resource %s: %q is not a resource option", name, opt))
			}
		}
	}
	for name, v := range prog.Variables {
		m, _ := v.(map[string]any)
		inv, ok := m["fn::invoke"].(map[string]any)
		if !ok {
			continue
		}
		fnTok, _ := inv["function"].(string)
		fn, ok := s.Functions[s.fullToken(fnTok)]
		if !ok {
			problems = append(problems, fmt.Sprintf("variable %s: function %q is not in the schema", name, fnTok))
			continue
		}
		args, _ := inv["arguments"].(map[string]any)
		var params map[string]schemaProp
		if fn.Inputs != nil {
			params = fn.Inputs.Properties
		}
		problems = append(problems, s.checkObject("variable "+name, args, params)...)
	}
	sort.Strings(problems)
	return problems
}

// fullToken expands Pulumi YAML's short form `pkg:Type` to `pkg:index:Type`.
func (s packageSchema) fullToken(tok string) string {
	if parts := strings.Split(tok, ":"); len(parts) == 2 {
		return parts[0] + ":index:" + parts[1]
	}
	return tok
}

// checkObject checks the keys of one object value against the properties it may have, and
// descends into nested objects, lists and maps of schema types.
func (s packageSchema) checkObject(where string, value map[string]any, props map[string]schemaProp) []string {
	var problems []string
	for key, v := range value {
		prop, ok := props[key]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %q is not a property here", where, key))
			continue
		}
		problems = append(problems, s.checkValue(where+"."+key, v, prop)...)
	}
	return problems
}

func (s packageSchema) checkValue(where string, v any, prop schemaProp) []string {
	switch {
	case strings.HasPrefix(prop.Ref, "#/types/"):
		obj, isObj := v.(map[string]any)
		ty, known := s.Types[strings.TrimPrefix(prop.Ref, "#/types/")]
		if isObj && known && ty.Enum == nil {
			return s.checkObject(where, obj, ty.Properties)
		}
	case prop.Type == "array" && prop.Items != nil:
		var problems []string
		list, _ := v.([]any)
		for i, item := range list {
			problems = append(problems, s.checkValue(fmt.Sprintf("%s[%d]", where, i), item, *prop.Items)...)
		}
		return problems
	case prop.Type == "object" && prop.AdditionalProperties != nil:
		var problems []string
		m, _ := v.(map[string]any)
		for k, item := range m {
			problems = append(problems, s.checkValue(where+"."+k, item, *prop.AdditionalProperties)...)
		}
		return problems
	}
	return nil
}

// The npm and Python packages carry a description and a README with install and usage text
// (otherwise the codegen falls back to the one-line package description).
func TestSchemaGivesPackageReadmes(t *testing.T) {
	t.Parallel()
	resp, err := server(t).GetSchema(p.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Language map[string]map[string]any `json:"language"`
	}
	if err := json.Unmarshal([]byte(resp.Schema), &s); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Language["nodejs"]["packageDescription"].(string); d == "" {
		t.Error("language.nodejs.packageDescription is empty: package.json would have no description")
	}
	for lang, wants := range map[string][]string{
		"nodejs": {"npm install", "pulumi plugin install", "```typescript", `from "@proxmoxtalos/proxmoxtalos"`},
		"python": {"pip install", "pulumi plugin install", "```python", "import pulumi_proxmoxtalos"},
	} {
		readme, _ := s.Language[lang]["readme"].(string)
		for _, want := range wants {
			if !strings.Contains(readme, want) {
				t.Errorf("language.%s.readme lacks %q", lang, want)
			}
		}
	}
}
