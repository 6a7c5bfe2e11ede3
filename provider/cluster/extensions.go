package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/imagefactory"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/provider/version"
)

// extensionChecker asks an Image Factory whether it offers every extension
// for a Talos release (imagefactory.Client.CheckExtensionsOrWarn).
type extensionChecker func(ctx context.Context, factoryURL, talosTag string, names []string) (warning string, err error)

func factoryExtensions(ctx context.Context, factoryURL, talosTag string, names []string) (string, error) {
	if factoryURL == "" {
		factoryURL = talosconfig.DefaultFactoryURL
	}
	c := &imagefactory.Client{BaseURL: strings.TrimRight(factoryURL, "/"), UserAgent: "pulumi-resource-proxmoxtalos/" + version.Version}
	return c.CheckExtensionsOrWarn(ctx, talosTag, names)
}

// checkExtensions refuses, before anything is registered, extensions the
// factory does not offer for the planned Talos release, against the input
// the user wrote (the schematic resource would otherwise fail later, in its
// own terms, after the component and VMs were planned). Nodes that already
// run this schematic and release need no question.
func checkExtensions(ctx context.Context, check extensionChecker, p *plan.Plan, prev *plan.State, im *Image) (warning string, err error) {
	if im != nil && im.SkipSchematicRegistration || len(p.Cluster.Image.Extensions) == 0 {
		return "", nil
	}
	next := p.State()
	if prev != nil && len(next.Nodes) > 0 {
		for _, n := range prev.Nodes {
			if n.Image == next.Nodes[0].Image && n.TalosVersion == p.Cluster.TalosVersion {
				return "", nil
			}
		}
	}
	factory := ""
	if im != nil {
		factory = im.FactoryUrl
	}
	if check == nil {
		check = factoryExtensions
	}
	warning, err = check(ctx, factory, p.Cluster.TalosVersion, p.Cluster.Image.Extensions)
	if err != nil {
		return "", fmt.Errorf("image.extensions: %w", err)
	}
	return warning, nil
}
