package talosconfig

import (
	"bytes"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config"
	coreconfig "github.com/siderolabs/talos/pkg/machinery/config/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/merge"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
	"github.com/proxmoxtalos/proxmoxtalos/provider/yamldocs"
)

// The document path (issue 14: cheap previews) computes what applyPatches
// and Validate compute, one document at a time, so that what nodes share
// is computed once per process. The nodes of a role differ in small
// documents (HostnameConfig, LinkAliasConfig); their large v1alpha1
// document, and the v1alpha1 part of the provider's patch, are the same
// text for every node of the role: merged, encoded and parsed once.
//
// Why the answer is the slow path's, byte for byte:
//   - A YAML stream's documents are parsed independently: configloader
//     decodes them one by one (decoder.parse), then container.New checks
//     duplicates and conflicts between them. yamldocs.Split cuts only at lines
//     that are exactly "---" and refuses any text where another line could
//     be a marker or a directive ("--- x", "...", "%"), so each piece is one
//     document of the stream, and container.New runs on the pieces too.
//   - configpatcher.StrategicMerge merges each patch document into the
//     current document with the same apiVersion/kind/name (on a clone) or
//     appends it, and the container encodes the v1alpha1 document first,
//     then the others in order, joined by "---" lines (container
//     encodeToBuf at machinery v1.13.9): stepDocs does the same per
//     document, with the same clone, merge and encoder calls.
//   - Between patches the slow path encodes and parses again (applyPatch
//     works on the text after the first patch, then normalize): each
//     document here goes through the same encode and parse.
//   - Anything else (a JSON6902 patch, delete selectors, a piece that is not
//     one document, an error anywhere, a configuration that fails
//     validation) takes the slow path, which also words the errors.
//
// TestDocumentPathIsTheSlowPath compares both on many inputs.

// docText is one document of a configuration as its encoder wrote it.
type docText struct {
	id   string // apiVersion/kind[/name], as configpatcher.StrategicMerge matches documents
	text string
	key  memo.Key
}

// generateByDocuments returns the configuration after every patch and its
// validation, or ok false when the slow path must answer.
func generateByDocuments(b *base, patches []string, mode RuntimeMode, talosVersion string) (final string, warnings []string, ok bool) {
	if b.docs == nil {
		return "", nil, false
	}
	tv, err := CheckTalosVersion(talosVersion)
	if err != nil {
		return "", nil, false
	}
	docs := b.docs
	for i, p := range patches {
		right, ok := patchDocs(p)
		if !ok {
			return "", nil, false
		}
		if docs, ok = stepDocs(docs, right, i > 0); !ok {
			return "", nil, false
		}
	}
	var buf bytes.Buffer
	parsed := make([]coreconfig.Document, 0, len(docs))
	for _, d := range docs {
		doc, ok := parseDoc(d)
		if !ok {
			return "", nil, false
		}
		parsed = append(parsed, doc)
		if buf.Len() > 0 {
			buf.WriteString("---\n")
		}
		buf.WriteString(d.text)
	}
	final = buf.String()
	r := validations.Do(validationKey(final, mode, talosVersion), func() validation {
		cfg, err := container.New(parsed...)
		if err != nil {
			// what configloader answers too: the text's own path words it
			warnings, msg := validate(final, mode, tv)
			return validation{warnings: warnings, msg: msg}
		}
		warnings, msg := validateParsed(cfg, final, mode, tv)
		return validation{warnings: warnings, msg: msg}
	})
	if r.msg != "" {
		return "", nil, false // the slow path names the patch to blame
	}
	return final, slices.Clone(r.warnings), true
}

// stepDocs applies one strategic merge patch's documents (right, in the
// order the patch's container lists them) to the documents of the
// configuration (v1alpha1 first). again: not the first patch, whose result
// the slow path parses and encodes once more (normalize).
func stepDocs(left []docText, right []patchDoc, again bool) ([]docText, bool) {
	out := make([]docText, 0, len(left)+len(right))
	merged := make([]bool, len(left))
	index := make(map[string]int, len(left))
	for i, d := range left {
		index[d.id] = i
	}
	next := make([]docText, len(left))
	for _, r := range right {
		i, found := index[r.id]
		if !found {
			continue
		}
		if merged[i] {
			return nil, false // two documents with one id: container.New refuses the patch
		}
		t, ok := mergeDoc(left[i], r)
		if !ok {
			return nil, false
		}
		next[i], merged[i] = t, true
	}
	for i, d := range left {
		if !merged[i] {
			t, ok := reencode(d)
			if !ok {
				return nil, false
			}
			next[i] = t
		}
	}
	out = append(out, next...)
	for _, r := range right {
		if _, found := index[r.id]; !found {
			out = append(out, r.encoded)
		}
	}
	// the container encodes its v1alpha1 document first
	for i, d := range out {
		if d.id == v1alpha1ID && i > 0 {
			out = append([]docText{d}, append(out[:i:i], out[i+1:]...)...)
			break
		}
	}
	if again {
		for i, d := range out {
			t, ok := reencode(d)
			if !ok {
				return nil, false
			}
			out[i] = t
		}
	}
	return out, true
}

// v1alpha1ID is the v1alpha1 document's id.
var v1alpha1ID = documentID(&v1alpha1.Config{})

// documentID is configpatcher.StrategicMerge's key of a document.
func documentID(doc coreconfig.Document) string {
	id := doc.APIVersion() + "/" + doc.Kind()
	if named, ok := doc.(coreconfig.NamedDocument); ok {
		id += "/" + named.Name()
	}
	return id
}

// patchDoc is one document of a patch, parsed (read only).
type patchDoc struct {
	id      string
	key     memo.Key
	doc     coreconfig.Document
	encoded docText // the document encoded, as appended when nothing matches it
}

// patchDocs are a strategic merge patch's documents in the order its
// container lists them (v1alpha1 first), each parsed once per process; ok
// false when the text is not plainly a set of documents.
func patchDocs(text string) ([]patchDoc, bool) {
	if strings.Contains(text, "$patch") {
		return nil, false // delete selectors: the slow path
	}
	pieces, ok := yamldocs.Split(text)
	if !ok || len(pieces) == 0 {
		return nil, false
	}
	out := make([]patchDoc, 0, len(pieces))
	all := make([]coreconfig.Document, 0, len(pieces))
	for _, piece := range pieces {
		pd, ok := loadPatchDoc(piece)
		if !ok {
			return nil, false
		}
		out = append(out, pd)
		all = append(all, pd.doc)
	}
	// what LoadPatch's container refuses (duplicates, conflicts)
	if _, err := container.New(all...); err != nil {
		return nil, false
	}
	for i, d := range out {
		if d.id == v1alpha1ID && i > 0 {
			out = append([]patchDoc{d}, append(out[:i:i], out[i+1:]...)...)
			break
		}
	}
	return out, true
}

// Process-wide caches of pure functions of document texts. Parsed documents
// are shared read only: merges work on clones (merge.Merge writes only its
// left side), validation and encoding read (TestSharedDocumentsStayUnchanged).
var (
	patchDocCache = memo.Cache[cached[patchDoc]]{Max: docCacheMax}
	parsedDocs    = memo.Cache[cached[coreconfig.Document]]{Max: docCacheMax}
	reencoded     = memo.Cache[cached[docText]]{Max: docCacheMax}
	mergedDocs    = memo.Cache[cached[docText]]{Max: docCacheMax} // keyed by the document's and the patch's keys
)

// cached is a kept answer; ok false: the slow path answers.
type cached[V any] struct {
	v  V
	ok bool
}

// docCacheMax bounds each cache; a full cache starts over.
const docCacheMax = 1024

// keep returns the kept answer for k, or computes and keeps it.
func keep[V any](c *memo.Cache[cached[V]], k memo.Key, compute func() (V, bool)) (V, bool) {
	a := c.Do(k, func() cached[V] {
		v, ok := compute()
		return cached[V]{v: v, ok: ok}
	})
	return a.v, a.ok
}

// loadPatchDoc parses one patch document as loadPatch parses a patch: the
// newer-kinds check, then configloader with delete selectors allowed.
func loadPatchDoc(piece string) (patchDoc, bool) {
	k := memo.KeyOf(piece)
	return keep(&patchDocCache, k, func() (patchDoc, bool) {
		if checkNewerDocuments(piece) != nil {
			return patchDoc{}, false
		}
		cfg, err := configloader.NewFromBytes([]byte(piece), configloader.WithAllowPatchDelete())
		if err != nil {
			return patchDoc{}, false
		}
		docs := cfg.Documents()
		if len(docs) != 1 {
			return patchDoc{}, false
		}
		if _, isSelector := docs[0].(interface {
			ApplyTo(coreconfig.Document) error
		}); isSelector {
			return patchDoc{}, false
		}
		enc, err := encodeDoc(docs[0])
		if err != nil {
			return patchDoc{}, false
		}
		id := documentID(docs[0])
		return patchDoc{id: id, key: k, doc: docs[0], encoded: newDocText(id, enc)}, true
	})
}

func newDocText(id, text string) docText { return docText{id: id, text: text, key: memo.KeyOf(text)} }

// parseDoc is a configuration document's text parsed (read only).
func parseDoc(d docText) (coreconfig.Document, bool) {
	return keep(&parsedDocs, d.key, func() (coreconfig.Document, bool) {
		cfg, err := configloader.NewFromBytes([]byte(d.text))
		if err != nil {
			return nil, false
		}
		docs := cfg.Documents()
		if len(docs) != 1 || documentID(docs[0]) != d.id {
			return nil, false
		}
		return docs[0], true
	})
}

// reencode is a document parsed and encoded again, as the slow path does
// to every document between patches.
func reencode(d docText) (docText, bool) {
	return keep(&reencoded, d.key, func() (docText, bool) {
		doc, ok := parseDoc(d)
		if !ok {
			return docText{}, false
		}
		enc, err := encodeDoc(doc)
		if err != nil {
			return docText{}, false
		}
		return newDocText(d.id, enc), true
	})
}

// mergeDoc is a document with one patch document merged into it, encoded.
func mergeDoc(d docText, r patchDoc) (docText, bool) {
	return keep(&mergedDocs, memo.KeyOf(string(d.key[:]), string(r.key[:])), func() (docText, bool) {
		doc, ok := parseDoc(d)
		if !ok {
			return docText{}, false
		}
		left := doc.Clone()
		if err := merge.Merge(left, r.doc); err != nil {
			return docText{}, false
		}
		enc, err := encodeDoc(left)
		if err != nil {
			return docText{}, false
		}
		return newDocText(d.id, enc), true
	})
}

// encodeDoc encodes one document as the container does for each of its
// documents (EncodeBytes with comments disabled).
func encodeDoc(doc coreconfig.Document) (string, error) {
	b, err := encoder.NewEncoder(doc, encoder.WithComments(encoder.CommentsDisabled)).Encode()
	return string(b), err
}

// baseDocs are a base configuration's documents, or nil when its text does
// not split into them.
func baseDocs(yaml []byte, parsed config.Provider) []docText {
	pieces, ok := yamldocs.Split(string(yaml))
	docs := parsed.Documents()
	if !ok || len(pieces) != len(docs) {
		return nil
	}
	out := make([]docText, len(pieces))
	for i, p := range pieces {
		// each piece parsed is the document parsed from the whole text
		// (the stream's documents parse independently): keep that one
		doc := docs[i]
		out[i] = newDocText(documentID(doc), p)
		keep(&parsedDocs, out[i].key, func() (coreconfig.Document, bool) { return doc, true })
	}
	return out
}
