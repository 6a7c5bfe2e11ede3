package talosapi

import (
	"context"

	"github.com/cosi-project/runtime/pkg/safe"

	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// imageSchematic is the Image Factory schematic ID an installer reference
// names ("" for other images).
func imageSchematic(image string) string {
	img, err := talosconfig.ParseFactoryURL(image)
	if err != nil || img.Kind != "installer" {
		return ""
	}

	return img.SchematicID
}

// readSchematic reads the schematic ID a node booted from an Image Factory
// image reports: factory images carry a "schematic" extension whose version
// is the ID (ExtensionStatus; siderolabs/talos v1.12.5
// controllers/k8s/node_label_spec_test.go shows it, and leaves it out of the
// node labels). ok is false when the node reports none.
func readSchematic(ctx context.Context, c *Conn) (id string, ok bool) {
	list, err := safe.StateListAll[*runtimeres.ExtensionStatus](c.nodeContext(ctx), c.client.COSI)
	if err != nil {
		return "", false
	}

	for ext := range list.All() {
		if md := ext.TypedSpec().Metadata; md.Name == "schematic" && md.Version != "" {
			return md.Version, true
		}
	}

	return "", false
}
