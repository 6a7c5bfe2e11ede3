package cluster

import (
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
