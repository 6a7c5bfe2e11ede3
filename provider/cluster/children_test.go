package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// The outputs the component reads from its children are fields of the
// children's State types, by name and type: a renamed or retyped output
// fails here rather than resolving to nothing in a user's stack.
func TestChildOutputsAreStateFields(t *testing.T) {
	children := []struct {
		outputs, state reflect.Type
	}{
		{reflect.TypeFor[virtualMachine](), reflect.TypeFor[proxmox.VirtualMachineState]()},
		{reflect.TypeFor[downloadFile](), reflect.TypeFor[proxmox.DownloadFileState]()},
		{reflect.TypeFor[schematic](), reflect.TypeFor[talos.ImageFactorySchematicState]()},
		{reflect.TypeFor[machineSecrets](), reflect.TypeFor[talos.MachineSecretsState]()},
		{reflect.TypeFor[configurationApply](), reflect.TypeFor[talos.ConfigurationApplyState]()},
		{reflect.TypeFor[bootstrap](), reflect.TypeFor[talos.BootstrapState]()},
		{reflect.TypeFor[kubeconfig](), reflect.TypeFor[talos.KubeconfigState]()},
		{reflect.TypeFor[clusterHealth](), reflect.TypeFor[talos.ClusterHealthState]()},
		{reflect.TypeFor[controlPlaneComponents](), reflect.TypeFor[talos.ControlPlaneComponentsState]()},
	}
	outputType := reflect.TypeFor[pulumi.Output]()
	for _, c := range children {
		fields := stateFields(c.state)
		for i := range c.outputs.NumField() {
			f := c.outputs.Field(i)
			name, ok := f.Tag.Lookup("pulumi")
			if !ok {
				continue
			}
			if n, _, _ := strings.Cut(name, ","); n == "" {
				t.Errorf("%s.%s has a catch-all (empty) pulumi tag: the engine's answers keep only the named outputs (framework.KeepOutputs), so it would see none of the others; name each output it reads",
					c.outputs.Name(), f.Name)
				continue
			}
			if !f.Type.Implements(outputType) {
				t.Errorf("%s.%s is a %s, not an output", c.outputs.Name(), f.Name, f.Type)
				continue
			}
			want := reflect.Zero(f.Type).Interface().(pulumi.Output).ElementType()
			got, ok := fields[name]
			switch {
			case !ok:
				t.Errorf("%s.%s reads %q, which %s does not have", c.outputs.Name(), f.Name, name, c.state)
			case got != want:
				t.Errorf("%s.%s reads %q as %s; %s has it as %s", c.outputs.Name(), f.Name, name, want, c.state, got)
			}
		}
	}
}

// Every child type has the one struct its outputs are read through, and a
// registration through another struct is refused: the engine's answers for
// the type keep only the outputs the first names.
func TestChildOutputsOnePerType(t *testing.T) {
	for _, token := range childTokens {
		if childOutputs[token] == nil {
			t.Errorf("%s has no entry in childOutputs: add the struct its outputs are read through", token)
		}
	}
	err := registerChild(nil, "n", &talos.KubeconfigArgs{}, nil, &bootstrap{})
	if err == nil || !strings.Contains(err.Error(), "keep only the outputs of cluster.kubeconfig") {
		t.Errorf("a Kubeconfig registered through a bootstrap struct: %v, want refused", err)
	}
}

// The component reads its children's outputs only through their structs'
// named fields: the raw outputs (the SDK's InternalGetRawOutputs) are the
// whole answer, which KeepOutputs trims to those names.
func TestChildrenReadOnlyTheOutputsTheyName(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "InternalGetRawOutputs") {
			t.Errorf("%s reads a child's raw outputs, which framework.KeepOutputs trims to the outputs its struct names: read a named output instead, or stop calling KeepOutputs for that type (children.go)", f)
		}
	}
}

// stateFields are a State type's properties by name, those of its embedded
// Args included.
func stateFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for k, v := range stateFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("pulumi"), ","); name != "" {
			out[name] = f.Type
		}
	}
	return out
}

// Each Args type the component registers a child from belongs to the token
// it is registered under: every property it sets is an input of that
// resource in the committed schema (make check-generated keeps the schema
// the provider's), and every input the resource requires is a required
// field of it.
func TestChildTokensMatchTheSchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "schema", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Resources map[string]struct {
			InputProperties map[string]json.RawMessage `json:"inputProperties"`
			RequiredInputs  []string                   `json:"requiredInputs"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	for args, token := range childTokens {
		res, ok := spec.Resources[token]
		if !ok {
			t.Errorf("%s is registered as %s, which the schema does not have", args, token)
			continue
		}
		required := map[string]bool{}
		for i := range args.NumField() {
			f := args.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("pulumi"), ",")
			if f.Anonymous || name == "" {
				continue // the embedded preview-only values are outputs (framework.OutputsOnly)
			}
			if _, ok := res.InputProperties[name]; !ok {
				t.Errorf("%s.%s sets %q, which is not an input of %s", args, f.Name, name, token)
			}
			required[name] = !strings.Contains(opts, "optional")
		}
		for _, name := range res.RequiredInputs {
			if !required[name] {
				t.Errorf("%s requires %q, which %s does not have as a required field", token, name, args)
			}
		}
	}
}
