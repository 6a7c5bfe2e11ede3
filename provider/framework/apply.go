package framework

import (
	"slices"

	p "github.com/pulumi/pulumi-go-provider"
)

// Workarounds are the package-specific parts of the workarounds (doc.go
// says what each works around); the generic mechanisms are this package's.
// The packages that know the specifics provide them, and provider.New,
// which imports them all, hands them to Apply: they cannot be registered
// from here without an import cycle (config, cluster and talos import this
// package).
type Workarounds struct {
	// ConfigDiff replaces infer's replace-on-any-change config diff.
	ConfigDiff ConfigDiff
	// SchemaFixes run, in order, in one decode/encode of the schema.
	SchemaFixes []SchemaFix
	// ConstructGuards prepare each component's inputs.
	ConstructGuards []ConstructGuard
	// PreviewUnknowns mark update-preview outputs unknown that no changed
	// input explains.
	PreviewUnknowns []PreviewUnknowns
	// InputsOnly are inputs the states of their resources do not keep.
	InputsOnly InputsOnly
	// PreviewEchoes trims the preview Creates of the resources components
	// registered (RegisterEcho) of copies of their inputs.
	PreviewEchoes PreviewEchoes
}

// Apply applies every workaround to the provider infer built, in one pass
// and in a fixed order: the request facts (URN, Check's old inputs, Diff's
// ID) wrap everything else, so each of the others already sees them.
func Apply(prov p.Provider, w Workarounds) p.Provider {
	if w.ConfigDiff.Equal != nil {
		prov.DiffConfig = w.ConfigDiff.Diff
	}
	prov = WithSchemaFixes(prov, append(slices.Clip(w.SchemaFixes), w.InputsOnly.Schema())...)
	prov = WithConstructGuards(prov, w.ConstructGuards...)
	prov = WithPreviewUnknowns(prov, w.PreviewUnknowns...)
	prov = w.InputsOnly.Wrap(prov)
	prov = w.PreviewEchoes.Wrap(prov)
	prov = WithURN(prov)
	return WithRequestFacts(prov)
}
