package talosapi

import (
	"context"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"

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
// node labels). ok is false when the node reports none: no such extension,
// no extensions at all, or a node that does not serve the list (NotFound,
// Unimplemented). Any other error is returned: a read that failed says
// nothing about the schematic.
func readSchematic(ctx context.Context, c *Conn) (id string, ok bool, err error) {
	list, err := safe.StateListAll[*runtimeres.ExtensionStatus](c.nodeContext(ctx), c.client.COSI)
	if err != nil {
		if state.IsNotFoundError(err) || client.StatusCode(err) == codes.NotFound || client.StatusCode(err) == codes.Unimplemented {
			return "", false, nil
		}

		return "", false, err
	}

	for ext := range list.All() {
		if md := ext.TypedSpec().Metadata; md.Name == "schematic" && md.Version != "" {
			return md.Version, true, nil
		}
	}

	return "", false, nil
}
