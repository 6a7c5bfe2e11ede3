package talos

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/imagefactory"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/provider/version"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// ImageFactorySchematic registers a schematic with an Image Factory.
type ImageFactorySchematic struct {
	backoff time.Duration // first wait before retrying the factory; 0: the client's default
}

// Annotate documents the resource.
func (r *ImageFactorySchematic) Annotate(a infer.Annotator) {
	a.Describe(r, docs.Description("proxmoxtalos:talos:ImageFactorySchematic"))
}

// ImageFactorySchematicArgs are the inputs.
type ImageFactorySchematicArgs struct {
	Extensions        []string        `pulumi:"extensions,optional"`
	KernelArgs        []string        `pulumi:"kernelArgs,optional"`
	Meta              []SchematicMeta `pulumi:"meta,optional"`
	FactoryUrl        string          `pulumi:"factoryUrl,optional"` //nolint:revive // Pulumi name
	SkipRegistration  bool            `pulumi:"skipRegistration,optional"`
	TalosVersion      string          `pulumi:"talosVersion,optional"`
	Platform          string          `pulumi:"platform,optional"`
	Architecture      *Architecture   `pulumi:"architecture,optional"`
	InstallerRegistry string          `pulumi:"installerRegistry,optional"`
}

// SchematicMeta is one initial META value.
type SchematicMeta struct {
	Key   int    `pulumi:"key"`
	Value string `pulumi:"value"`
}

// Annotate documents a META value.
func (m *SchematicMeta) Annotate(a infer.Annotator) {
	framework.Annotate(a, m, func() {
		a.Describe(m, "An initial value of the Talos META partition, baked into the images.")
		a.Describe(&m.Key, "META key, 0 to 255 (for example 10, `0x0a`, holds the platform network configuration).")
		a.Describe(&m.Value, "The value written to the key.")
	})
}

// Annotate documents the inputs.
func (a *ImageFactorySchematicArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.Extensions, "Official system extensions, for example `siderolabs/qemu-guest-agent` (needed for the "+
			"Proxmox guest agent to answer). Order changes the schematic ID. Changing them replaces the resource "+
			"(another schematic). Default: none.")
		an.Describe(&a.KernelArgs, "Extra kernel arguments baked into the images, for example `console=ttyS0`. "+
			"Changing them replaces the resource. Default: none.")
		an.Describe(&a.Meta, "Initial META partition values. Changing them replaces the resource. Default: none.")
		an.Describe(&a.FactoryUrl, "Base URL of the Image Factory (or of a mirror) to register with and build URLs from.")
		an.SetDefault(&a.FactoryUrl, talosconfig.DefaultFactoryURL)
		an.Describe(&a.SkipRegistration, "Do not contact the factory: for mirrors that serve a fixed set of "+
			"schematics and have no API. The ID and URLs are computed offline. Default: false.")
		an.Describe(&a.TalosVersion, "Talos version of the image URLs, for example `v1.12.5`; also the version whose "+
			"official extensions are checked. Without it the URL outputs are empty.")
		an.Describe(&a.Platform, "Talos platform of the image URLs: `nocloud` reads addresses from Proxmox cloud-init.")
		an.SetDefault(&a.Platform, "nocloud")
		an.Describe(&a.Architecture, "CPU architecture of the images. Changing it changes the URL outputs.")
		an.SetDefault(&a.Architecture, ArchitectureAmd64)
		an.Describe(&a.InstallerRegistry, "Registry (`host[:port][/path]`, no scheme) serving installer images. "+
			"Default: the factory URL's host and path (the Image Factory is also a registry).")
	})
}

// ImageFactorySchematicState is the state.
type ImageFactorySchematicState struct {
	ImageFactorySchematicArgs
	SchematicId       string `pulumi:"schematicId"` //nolint:revive // Pulumi name
	Schematic         string `pulumi:"schematic"`
	IsoUrl            string `pulumi:"isoUrl"`            //nolint:revive // Pulumi name
	DiskImageUrl      string `pulumi:"diskImageUrl"`      //nolint:revive // Pulumi name
	DiskImageQcow2Url string `pulumi:"diskImageQcow2Url"` //nolint:revive // Pulumi name
	InstallerImage    string `pulumi:"installerImage"`
}

// Annotate documents the outputs.
func (s *ImageFactorySchematicState) Annotate(a infer.Annotator) {
	framework.Annotate(a, s, func() {
		a.Describe(&s.SchematicId, "The schematic ID (64 hex characters), as the factory computes it; also the resource ID.")
		a.Describe(&s.Schematic, "The schematic YAML as posted to the factory.")
		a.Describe(&s.IsoUrl, "URL of the ISO to boot VMs from (`.../<platform>-<arch>.iso`); empty without `talosVersion`.")
		a.Describe(&s.DiskImageUrl, "URL of the raw disk image, xz-compressed; empty without `talosVersion`.")
		a.Describe(&s.DiskImageQcow2Url, "URL of the qcow2 disk image; empty without `talosVersion`.")
		a.Describe(&s.InstallerImage, "Installer image for `machine.install.image` and upgrades "+
			"(`<registry>/<platform>-installer/<schematic>:<version>`); empty without `talosVersion`.")
	})
}

func (a ImageFactorySchematicArgs) schematic() talosconfig.Schematic {
	s := talosconfig.Schematic{Extensions: a.Extensions, KernelArgs: a.KernelArgs}
	for _, m := range a.Meta {
		s.Meta = append(s.Meta, talosconfig.MetaValue{Key: uint8(m.Key), Value: m.Value}) //nolint:gosec // Check bounds it
	}

	return s
}

// Check validates the inputs.
func (*ImageFactorySchematic) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[ImageFactorySchematicArgs], error) {
	args, fails, err := infer.DefaultCheck[ImageFactorySchematicArgs](ctx, req.NewInputs)
	if err != nil {
		return infer.CheckResponse[ImageFactorySchematicArgs]{Inputs: args, Failures: fails}, err
	}

	fail := func(prop, format string, a ...any) {
		fails = append(fails, p.CheckFailure{Property: prop, Reason: fmt.Sprintf(format, a...)})
	}

	for i, m := range args.Meta {
		if m.Key < 0 || m.Key > 255 {
			fail(fmt.Sprintf("meta[%d].key", i), "META key %d is out of range: use 0 to 255", m.Key)
		}
	}

	if err := args.schematic().Check(); err != nil {
		fail("extensions", "%s", err)
	}

	if msg := talosconfig.CheckPlatform(args.Platform); msg != "" {
		fail("platform", "%s", msg)
	}

	if u, err := url.Parse(args.FactoryUrl); args.FactoryUrl != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		fail("factoryUrl", "%q is not an http(s) base URL such as %s", args.FactoryUrl, talosconfig.DefaultFactoryURL)
	}

	if len(fails) == 0 {
		if _, err := schematicState(args); err != nil {
			fail("talosVersion", "%s", err)
		}
	}

	return infer.CheckResponse[ImageFactorySchematicArgs]{Inputs: args, Failures: fails}, nil
}

// schematicState computes every output offline.
func schematicState(args ImageFactorySchematicArgs) (ImageFactorySchematicState, error) {
	st := ImageFactorySchematicState{ImageFactorySchematicArgs: args}
	s := args.schematic()

	body, err := s.YAML()
	if err != nil {
		return st, err
	}

	st.Schematic = string(body)
	st.SchematicId, _ = s.ID() //nolint:errcheck // YAML succeeded

	if args.TalosVersion == "" {
		return st, nil
	}

	urls, err := talosconfig.FactoryURLs(st.SchematicId, args.TalosVersion, talosconfig.FactoryOptions{
		BaseURL: args.FactoryUrl, InstallerRegistry: args.InstallerRegistry, Platform: args.Platform, Arch: archOrDefault(args.Architecture),
	})
	if err != nil {
		return st, err
	}

	st.IsoUrl, st.DiskImageUrl, st.DiskImageQcow2Url, st.InstallerImage = urls.ISO, urls.DiskRawXZ, urls.DiskQCOW2, urls.Installer

	return st, nil
}

func (r *ImageFactorySchematic) client(base string) *imagefactory.Client {
	if base == "" {
		base = talosconfig.DefaultFactoryURL
	}

	return &imagefactory.Client{
		BaseURL: strings.TrimRight(base, "/"), UserAgent: "pulumi-resource-proxmoxtalos/" + version.Version, Backoff: r.backoff,
	}
}

// checkExtensions asks the factory whether it offers every extension for
// talosVersion (without a version there is nothing to ask).
func (r *ImageFactorySchematic) checkExtensions(ctx context.Context, st ImageFactorySchematicState) error {
	if st.TalosVersion == "" || len(st.Extensions) == 0 {
		return nil
	}

	v, _ := talosconfig.ParseVersion(st.TalosVersion) //nolint:errcheck // Check parsed it
	if err := r.client(st.FactoryUrl).CheckExtensions(ctx, talosconfig.TalosTag(v), st.Extensions); err != nil {
		var unknown *imagefactory.UnknownExtensionsError
		if errors.As(err, &unknown) {
			return fmt.Errorf("extensions: %w", err)
		}

		return fmt.Errorf("%w (for a mirror without the factory API set skipRegistration)", err)
	}

	return nil
}

// previewExtensions is the check in a preview: an unknown extension fails
// it; a factory that does not answer only warns.
func (r *ImageFactorySchematic) previewExtensions(ctx context.Context, st ImageFactorySchematicState) error {
	if st.SkipRegistration || st.TalosVersion == "" || len(st.Extensions) == 0 || slices.Contains(st.Extensions, "") { // "": not known before up
		return nil
	}

	v, _ := talosconfig.ParseVersion(st.TalosVersion) //nolint:errcheck // Check parsed it

	warning, err := r.client(st.FactoryUrl).CheckExtensionsOrWarn(ctx, talosconfig.TalosTag(v), st.Extensions)
	if warning != "" {
		enginelog.Logger(ctx).Warning(warning)
	}

	if err != nil {
		return fmt.Errorf("extensions: %w", err)
	}

	return nil
}

// register checks the extensions and posts the schematic.
func (r *ImageFactorySchematic) register(ctx context.Context, st ImageFactorySchematicState) error {
	c := r.client(st.FactoryUrl)

	if err := r.checkExtensions(ctx, st); err != nil {
		return err
	}

	id, _, err := c.Register(ctx, []byte(st.Schematic))
	if err != nil {
		return fmt.Errorf("registering schematic %s with the image factory failed: %w "+
			"(for a mirror without the factory API set skipRegistration)", st.SchematicId, err)
	}

	if id != st.SchematicId {
		return fmt.Errorf("image factory %s registered the schematic as %s, but its ID is %s as the public factory computes it: "+
			"this factory changes schematics (an Enterprise factory with authentication adds an owner), so images built "+
			"from %s would not match; use this provider only with factories that keep schematics as posted",
			c.BaseURL, id, st.SchematicId, st.SchematicId)
	}

	enginelog.Logger(ctx).Infof("image factory %s has schematic %s", c.BaseURL, id)

	return nil
}

// Create registers the schematic; a preview only checks the extensions.
func (r *ImageFactorySchematic) Create(ctx context.Context, req infer.CreateRequest[ImageFactorySchematicArgs]) (infer.CreateResponse[ImageFactorySchematicState], error) {
	st, err := schematicState(req.Inputs)
	if err != nil {
		return infer.CreateResponse[ImageFactorySchematicState]{}, err
	}

	if req.DryRun {
		err = r.previewExtensions(ctx, st)
	} else if !st.SkipRegistration {
		err = r.register(ctx, st)
	}

	if err != nil {
		return infer.CreateResponse[ImageFactorySchematicState]{}, err
	}

	return infer.CreateResponse[ImageFactorySchematicState]{ID: st.SchematicId, Output: st}, nil
}

// Update registers again (idempotent) and recomputes the URLs.
func (r *ImageFactorySchematic) Update(ctx context.Context, req infer.UpdateRequest[ImageFactorySchematicArgs, ImageFactorySchematicState]) (infer.UpdateResponse[ImageFactorySchematicState], error) {
	st, err := schematicState(req.Inputs)
	if err != nil {
		return infer.UpdateResponse[ImageFactorySchematicState]{}, err
	}

	if req.DryRun {
		err = r.previewExtensions(ctx, st)
	} else if !st.SkipRegistration {
		err = r.register(ctx, st)
	}

	if err != nil {
		return infer.UpdateResponse[ImageFactorySchematicState]{}, err
	}

	return infer.UpdateResponse[ImageFactorySchematicState]{Output: st}, nil
}

// Read checks that the factory still has the schematic; on import it reads
// the schematic from the factory.
func (r *ImageFactorySchematic) Read(ctx context.Context, req infer.ReadRequest[ImageFactorySchematicArgs, ImageFactorySchematicState]) (infer.ReadResponse[ImageFactorySchematicArgs, ImageFactorySchematicState], error) {
	type resp = infer.ReadResponse[ImageFactorySchematicArgs, ImageFactorySchematicState]

	args := req.State.ImageFactorySchematicArgs
	importing := req.State.SchematicId == ""

	if importing {
		args = req.Inputs
		if args.FactoryUrl == "" {
			args.FactoryUrl = talosconfig.DefaultFactoryURL
		}

		if args.Platform == "" {
			args.Platform = "nocloud"
		}

		if args.Architecture == nil {
			amd64 := ArchitectureAmd64
			args.Architecture = &amd64
		}
	}

	if args.SkipRegistration {
		return resp{ID: req.ID, Inputs: args, State: req.State}, nil
	}

	c := r.client(args.FactoryUrl)

	body, err := c.Get(ctx, req.ID)
	if imagefactory.IsNotFound(err) {
		enginelog.Logger(ctx).Warningf("image factory %s no longer has schematic %s: the next update registers it again", c.BaseURL, req.ID)
		return resp{}, nil
	}

	if err != nil {
		return resp{}, fmt.Errorf("reading schematic %s from the image factory failed: %w", req.ID, err)
	}

	if !importing {
		return resp{ID: req.ID, Inputs: args, State: req.State}, nil
	}

	s, err := imagefactory.ParseSchematic(body)
	if err != nil {
		return resp{}, fmt.Errorf("importing schematic %s from %s: %w", req.ID, c.BaseURL, err)
	}

	args.Extensions, args.KernelArgs, args.Meta = s.Extensions, s.KernelArgs, nil
	for _, m := range s.Meta {
		args.Meta = append(args.Meta, SchematicMeta{Key: int(m.Key), Value: m.Value})
	}

	st, err := schematicState(args)
	if err != nil {
		return resp{}, fmt.Errorf("importing schematic %s: %w", req.ID, err)
	}

	if st.SchematicId != req.ID {
		return resp{}, fmt.Errorf("importing schematic %s from %s: the factory's schematic has ID %s as this provider "+
			"computes it (the factory added something the provider does not manage)", req.ID, c.BaseURL, st.SchematicId)
	}

	return resp{ID: req.ID, Inputs: args, State: st}, nil
}

// Diff replaces the resource when the schematic (its ID) changes, and
// updates it in place for anything else. (infer's default diff would not
// do: it applies replaceOnChanges only to whole properties, and reports an
// array change as "extensions[1]".)
func (*ImageFactorySchematic) Diff(_ context.Context, req infer.DiffRequest[ImageFactorySchematicArgs, ImageFactorySchematicState]) (infer.DiffResponse, error) {
	o, n := req.State.ImageFactorySchematicArgs, req.Inputs
	dd := map[string]p.PropertyDiff{}
	update := p.PropertyDiff{Kind: p.Update, InputDiff: true}

	if newID, _ := n.schematic().ID(); newID != req.State.SchematicId { //nolint:errcheck // Check validated it
		replace := p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
		if !slices.Equal(o.Extensions, n.Extensions) {
			dd["extensions"] = replace
		}

		if !slices.Equal(o.KernelArgs, n.KernelArgs) {
			dd["kernelArgs"] = replace
		}

		if !slices.Equal(o.Meta, n.Meta) {
			dd["meta"] = replace
		}
	}

	for name, changed := range map[string]bool{
		"factoryUrl":        o.FactoryUrl != n.FactoryUrl,
		"skipRegistration":  o.SkipRegistration != n.SkipRegistration,
		"talosVersion":      o.TalosVersion != n.TalosVersion,
		"platform":          o.Platform != n.Platform,
		"architecture":      archOrDefault(o.Architecture) != archOrDefault(n.Architecture),
		"installerRegistry": o.InstallerRegistry != n.InstallerRegistry,
	} {
		if changed {
			dd[name] = update
		}
	}

	return infer.DiffResponse{HasChanges: len(dd) > 0, DetailedDiff: dd}, nil
}

// Delete does nothing: schematics are content-addressed and shared.
func (*ImageFactorySchematic) Delete(context.Context, infer.DeleteRequest[ImageFactorySchematicState]) (infer.DeleteResponse, error) {
	return infer.DeleteResponse{}, nil
}
