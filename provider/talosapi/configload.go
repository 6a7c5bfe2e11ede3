package talosapi

import (
	"context"
	"fmt"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/resource/protobuf"
	"github.com/cosi-project/runtime/pkg/state"
	configpb "github.com/siderolabs/talos/pkg/machinery/api/resource/config"
	"github.com/siderolabs/talos/pkg/machinery/config"
	coreconfig "github.com/siderolabs/talos/pkg/machinery/config/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
	"github.com/siderolabs/talos/pkg/machinery/proto"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
	"github.com/proxmoxtalos/proxmoxtalos/provider/yamldocs"
)

// getMachineConfig reads a MachineConfig resource as safe.StateGetByID
// does, and parses its text as the resource does on receipt
// (configres.MachineConfig.UnmarshalProto: proto, then configloader; a
// text that does not parse is errConfigParse, never configloader's words,
// which can quote a value), but through loadShared: the nodes of a cluster run
// texts whose large v1alpha1 document is the same for every node of a role,
// and parsing it once per process instead of once per node was most of a
// no-op preview's Talos reads (issue 14).
func getMachineConfig(ctx context.Context, st state.CoreState, id resource.ID) ([]byte, config.Provider, error) {
	md := resource.NewMetadata(configres.NamespaceName, configres.MachineConfigType, id, resource.VersionUndefined)

	got, err := st.Get(ctx, md, state.WithGetUnmarshalOptions(state.WithSkipProtobufUnmarshal()))
	if err != nil {
		return nil, nil, err
	}

	r, ok := got.(*protobuf.Resource)
	if !ok {
		return nil, nil, fmt.Errorf("type mismatch: expected %T, got %T", r, got)
	}

	var spec machineConfigSpec
	if err := r.Unmarshal(&spec); err != nil {
		return nil, nil, err
	}

	return spec.text, spec.cfg, nil
}

// machineConfigSpec is MachineConfig.UnmarshalProto's work with loadShared.
type machineConfigSpec struct {
	text []byte
	cfg  config.Provider
}

func (s *machineConfigSpec) UnmarshalProto(_ *resource.Metadata, protoBytes []byte) error {
	var spec configpb.MachineConfigSpec
	if err := proto.Unmarshal(protoBytes, &spec); err != nil {
		return err
	}

	cfg, err := loadShared(spec.YamlMarshalled)
	if err != nil {
		// Not configloader's text: a go-yaml type error quotes the value
		// ("cannot unmarshal !!str `...`"), and this text holds secrets.
		return errConfigParse
	}

	s.text, s.cfg = spec.YamlMarshalled, cfg

	return nil
}

// loadShared is configloader.NewFromBytes(text) (read only) whose
// documents are parsed once per process each: the same answer, error and
// documents (shared, read only: callers only read facts off them).
//
// Why the same: configloader decodes a YAML stream document by document
// (decoder.parse: each document's decoding depends on its own node only),
// checks that no two share apiVersion, kind and name, and builds
// container.NewReadonly(text, documents...), whose own check (kind and
// name, no two v1alpha1) refuses every such pair too. yamldocs.Split cuts
// only at lines that are exactly "---" and refuses a text with any other
// line a YAML stream could read as a marker or directive, so each piece is
// one document of the stream; each piece parsed alone gives that document
// (configloader on the piece, exactly one document), and the container over
// all of them is built the same way. Anything else (one piece, a piece that
// does not parse alone, a container that refuses) is answered by
// configloader on the whole text, so every error is worded as before.
// TestLoadSharedIsConfigloaders compares both.
func loadShared(text []byte) (config.Provider, error) {
	pieces, ok := yamldocs.Split(string(text))
	if !ok || len(pieces) < 2 {
		return configloader.NewFromBytes(text)
	}

	docs := make([]coreconfig.Document, 0, len(pieces))

	for _, piece := range pieces {
		doc, ok := sharedDocument(piece)
		if !ok {
			return configloader.NewFromBytes(text)
		}

		docs = append(docs, doc)
	}

	cfg, err := container.NewReadonly(text, docs...)
	if err != nil {
		return configloader.NewFromBytes(text)
	}

	return cfg, nil
}

// sharedDocuments are parsed documents by their text. Only documents of
// sharedDocumentMin bytes or more are kept (the large v1alpha1 ones, which
// nodes share; a node's small documents are its own and cheap to parse),
// at most sharedDocumentsMax of them.
var sharedDocuments = memo.Cache[sharedDoc]{Max: sharedDocumentsMax}

const (
	sharedDocumentMin  = 1024
	sharedDocumentsMax = 64
)

type sharedDoc struct {
	doc coreconfig.Document
	ok  bool
}

// sharedDocument is piece parsed alone: its one document, or ok false.
func sharedDocument(piece string) (coreconfig.Document, bool) {
	parse := func() sharedDoc {
		cfg, err := configloader.NewFromBytes([]byte(piece))
		if err != nil {
			return sharedDoc{}
		}

		docs := cfg.Documents()
		if len(docs) != 1 {
			return sharedDoc{}
		}

		return sharedDoc{doc: docs[0], ok: true}
	}

	if len(piece) < sharedDocumentMin {
		d := parse()

		return d.doc, d.ok
	}

	d := sharedDocuments.Do(memo.KeyOf(piece), parse)

	return d.doc, d.ok
}
