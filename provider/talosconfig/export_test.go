package talosconfig

// Hooks for the external tests of this directory (package
// talosconfig_test). A _test.go file: they are in no build of the package
// and no part of its API; nothing outside this directory's tests can call
// them.

// GenerateBothWays holds the document path to the whole-text one on
// inputs built elsewhere (plans, plans_docs_test.go): the configuration by
// documents ("" when that path leaves it to the other) and by whole texts.
func GenerateBothWays(in Input) (byDocuments string, whole Result, err error) {
	mode := in.Mode
	if mode.name == "" {
		mode = Metal
	}
	b, err := baseFor(in, mode)
	if err != nil {
		return "", Result{}, err
	}
	byDocuments, _, _ = generateByDocuments(b, in.Patches, mode, in.TalosVersion)
	whole, err = generateSlow(in, b, mode)
	return byDocuments, whole, err
}
