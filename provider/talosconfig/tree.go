package talosconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// doc is one document of a machine configuration as a generic tree.
type doc struct {
	// id is "" for the v1alpha1 document (its paths start at machine. and
	// cluster.), otherwise Kind or Kind/name, e.g. Layer2VIPConfig/192.168.1.220.
	id   string
	body any
}

// parseDocs splits a (multi-document) configuration into generic trees.
// Errors never quote the input.
func parseDocs(configYAML string) ([]doc, error) {
	dec := yaml.NewDecoder(bytes.NewReader([]byte(configYAML)))
	var docs []doc
	seen := map[string]bool{}
	for {
		var body any
		err := dec.Decode(&body)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("configuration is not valid YAML (%s)", lineRefs(err))
		}
		if body == nil {
			continue
		}
		m, ok := stringKeys(body).(map[string]any)
		if !ok {
			return nil, fmt.Errorf("configuration document %d is not a mapping", len(docs)+1)
		}
		id := docID(m)
		if seen[id] {
			return nil, fmt.Errorf("configuration has two %s documents", displayDocID(id))
		}
		seen[id] = true
		docs = append(docs, doc{id: id, body: m})
	}
	if len(docs) == 0 {
		return nil, errors.New("configuration is empty")
	}
	return docs, nil
}

func docID(m map[string]any) string {
	kind, _ := m["kind"].(string)
	if kind == "" {
		return "" // the v1alpha1 document has `version: v1alpha1` and no kind
	}
	if name, ok := m["name"]; ok && name != nil {
		return fmt.Sprintf("%s/%v", kind, name)
	}
	return kind
}

func displayDocID(id string) string {
	if id == "" {
		return "v1alpha1"
	}
	return id
}

// joinPath renders a path: keys joined with dots, list indices as [i], keys
// that are not plain identifiers quoted (nodeLabels["node.kubernetes.io/x"]).
// A document other than v1alpha1 prefixes its id and ": ".
func joinPath(docID string, parts []any) string {
	var b strings.Builder
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		case string:
			if plainKey.MatchString(v) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(v)
			} else {
				fmt.Fprintf(&b, "[%s]", strconv.Quote(v))
			}
		}
	}
	if docID == "" {
		return b.String()
	}
	if b.Len() == 0 {
		return docID
	}
	return docID + ": " + b.String()
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// walkLeaves calls fn for every leaf (scalar, empty map, empty list) in
// stable order: map keys sorted, list items by index.
func walkLeaves(node any, parts []any, fn func(parts []any, v any)) {
	switch v := node.(type) {
	case map[string]any:
		if len(v) == 0 {
			fn(parts, v)
			return
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			walkLeaves(v[k], appendPart(parts, k), fn)
		}
	case []any:
		if len(v) == 0 {
			fn(parts, v)
			return
		}
		for i, item := range v {
			walkLeaves(item, appendPart(parts, i), fn)
		}
	default:
		fn(parts, v)
	}
}

func appendPart(parts []any, p any) []any {
	out := make([]any, len(parts), len(parts)+1)
	copy(out, parts)
	return append(out, p)
}

// lineRefs keeps only the line numbers of a YAML error: its text can quote
// the input, which may be secret.
func lineRefs(err error) string {
	lines := lineRef.FindAllString(err.Error(), 3)
	if len(lines) == 0 {
		return "malformed YAML"
	}
	return "malformed YAML near " + strings.Join(lines, ", ")
}

// stringKeys turns map[any]any (YAML mappings with non-string keys) into
// map[string]any, recursively, so every tree has one shape.
func stringKeys(node any) any {
	switch v := node.(type) {
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, item := range v {
			out[fmt.Sprint(k)] = stringKeys(item)
		}
		return out
	case map[string]any:
		for k, item := range v {
			v[k] = stringKeys(item)
		}
		return v
	case []any:
		for i, item := range v {
			v[i] = stringKeys(item)
		}
		return v
	default:
		return v
	}
}
