package talosconfig

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ghodss/yaml"
)

// ManifestObjects parses a manifest (an inline manifest's contents) into
// its objects as a control plane renders it (siderolabs/talos v1.13.9
// internal/app/machined/pkg/adapters/k8s/manifest.go SetYAML): YAML
// documents split at "---" lines, each converted to JSON with YAML 1.1
// rules (sigs.k8s.io/yaml, whose origin github.com/ghodss/yaml this uses:
// an unquoted `yes` is true), documents holding only comments skipped, a
// List's items unwrapped.
func ManifestObjects(contents []byte) ([]map[string]any, error) {
	var out []map[string]any
	docs, err := yamlDocuments(contents)
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("error converting manifest to JSON: %w", err)
		}
		if bytes.Equal(js, []byte("null")) || bytes.Equal(js, []byte("{}")) {
			continue
		}
		var o map[string]any
		if err := json.Unmarshal(js, &o); err != nil {
			return nil, fmt.Errorf("error loading JSON manifest into unstructured: %w", err)
		}
		items, isList := o["items"].([]any)
		if !isList {
			out = append(out, o)
			continue
		}
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("error unwrapping a List: item is %T, not an object", it)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// yamlDocuments splits YAML at document separators as
// k8s.io/apimachinery/pkg/util/yaml's YAMLReader does: a line starting
// with "---" followed by nothing but blanks or a comment.
func yamlDocuments(b []byte) ([][]byte, error) {
	var (
		out [][]byte
		cur bytes.Buffer
	)
	r := bufio.NewReader(bytes.NewReader(b))
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if rest, ok := bytes.CutPrefix(line, []byte("---")); ok {
				if t := strings.TrimSpace(string(rest)); t != "" && !strings.HasPrefix(t, "#") {
					return nil, fmt.Errorf("invalid YAML document separator: %s", strings.TrimSpace(string(line)))
				}
				out = append(out, bytes.TrimSpace(bytes.Clone(cur.Bytes())))
				cur.Reset()
			} else {
				cur.Write(line)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out = append(out, bytes.TrimSpace(cur.Bytes()))
	var docs [][]byte
	for _, d := range out {
		if len(d) > 0 {
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// ObjectsDigest is a short sha256 of objects as JSON (keys sorted): what
// tells whether a control plane renders a manifest with the contents
// expected, whichever way its numbers were decoded.
func ObjectsDigest(objects []map[string]any) string {
	b, _ := json.Marshal(objects) //nolint:errchkjson // objects decoded from JSON or YAML always marshal
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}

// InputDigest is the digest BootstrapManifestInputs gives a URL: a
// rendered manifest's ID ("99-<url>") tells by it which URL it is.
func InputDigest(s string) string { return digestOf(s) }
