package talosconfig

import (
	"errors"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"gopkg.in/yaml.v3"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosrelease"
)

// PatchKind tells how a patch is applied.
type PatchKind string

// Patch kinds.
const (
	StrategicMerge PatchKind = "strategic-merge"
	JSON6902       PatchKind = "json6902"
)

// DetectPatch parses a patch the way talosctl does (configpatcher.LoadPatch:
// a config document set is a strategic merge patch, a list of operations is
// JSON6902) and reports its kind.
func DetectPatch(text string) (PatchKind, error) {
	p, err := loadPatch(text)
	if err != nil {
		return "", err
	}
	if _, ok := p.(jsonpatch.Patch); ok {
		return JSON6902, nil
	}
	return StrategicMerge, nil
}

func loadPatch(text string) (configpatcher.Patch, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("patch is empty")
	}
	if err := checkNewerDocuments(text); err != nil {
		return nil, err
	}
	p, err := configpatcher.LoadPatch([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("is neither a strategic merge patch (YAML config documents) nor a JSON6902 patch "+
			"(a list of {op, path, value}): %s", scrubDecodeError(err))
	}
	return p, nil
}

// applyPatch applies one patch to current. parsed, when not nil, is current
// parsed: a strategic merge patch works on a clone of it
// (configpatcher.StrategicMerge clones its input) instead of parsing
// current again.
func applyPatch(current []byte, parsed config.Provider, text string) ([]byte, error) {
	p, err := loadPatch(text)
	if err != nil {
		return nil, err
	}
	in := configpatcher.WithBytes(current)
	_, strategic := p.(configpatcher.StrategicMergePatch)
	onConfig := strategic && parsed != nil
	if onConfig {
		in = configpatcher.WithConfig(parsed)
	}
	out, err := configpatcher.Apply(in, []configpatcher.Patch{p})
	if err != nil {
		if _, isJSON := p.(jsonpatch.Patch); isJSON && strings.Contains(err.Error(), "multi-document") {
			return nil, fmt.Errorf("%w: this configuration has several documents (Talos 1.12 contracts always do), "+
				"so write the change as a strategic merge patch, for example `machine: {kubelet: {extraArgs: {key: value}}}`", err)
		}
		return nil, err
	}
	b, err := out.Bytes()
	if err != nil {
		return nil, err
	}
	if onConfig {
		// A strategic merge on a parsed configuration answers with that
		// configuration encoded without comments (machinery v1.13.9
		// config/configpatcher/apply.go:28, configOrBytes.Bytes:
		// EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))),
		// which is normalize's form already: parsing and encoding it again
		// gives the same text (TestStrategicPatchOnParsedBaseIsNormalized).
		return b, nil
	}
	// Re-encode so that every step has the same canonical form whatever
	// kind of patch produced it.
	return normalize(b)
}

// checkNewerDocuments refuses a patch that brings a document kind of a Talos
// release newer than the configuration contracts generated here (1.14's
// KubeletConfig, UnattendedInstallConfig, ...: talosrelease.Documents).
// machinery would only say `"KubeletConfig" "v1alpha1": not registered`;
// this says why and what to write instead.
func checkNewerDocuments(text string) error {
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var doc struct {
			Kind string `yaml:"kind"`
		}
		if err := dec.Decode(&doc); err != nil {
			return nil // the end, or YAML that LoadPatch reports on
		}
		if minor, ok := talosrelease.DocumentRelease(doc.Kind); ok {
			return fmt.Errorf("document kind %s is a Talos 1.%d document: this provider generates configurations on the "+
				"v1.%d contract at most (Talos 1.%d nodes run them as they are), where that setting is a field of the "+
				"v1alpha1 document (for example .machine.kubelet for KubeletConfig, .machine.install for "+
				"UnattendedInstallConfig, .cluster.apiServer for KubeAPIServerConfig); write the patch against that field",
				doc.Kind, minor, maxContractMinor, minor)
		}
	}
}
