package talos

import (
	"reflect"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// PreviewOutputs lists the values that Check derives for previews
// (ConfigurationApply's configView and configChange, ClusterHealth's
// requires, ControlPlaneComponents' change) in the schema as outputs only:
// Check writes them into the checked inputs for the preview's display, and
// no user sets them.
func PreviewOutputs() framework.SchemaFix {
	return framework.OutputsOnly(map[string]reflect.Type{
		"proxmoxtalos:talos:ConfigurationApply":     reflect.TypeFor[ConfigurationApplyPreview](),
		"proxmoxtalos:talos:ClusterHealth":          reflect.TypeFor[ClusterHealthPreview](),
		"proxmoxtalos:talos:ControlPlaneComponents": reflect.TypeFor[ControlPlaneComponentsPreview](),
	})
}
