package talos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ghodss/yaml"
)

// parseManifest reads a manifest's objects as Talos renders them
// (siderolabs/talos v1.13.9 internal/app/machined/pkg/adapters/k8s/
// manifest.go SetYAML): documents split as k8s.io/apimachinery's
// YAMLReader splits them (a line starting with "---", then only blanks or
// a comment), each converted to JSON with YAML 1.1 rules
// (sigs.k8s.io/yaml, from github.com/ghodss/yaml: an unquoted `yes` is
// true), documents with only comments skipped, a List's items unwrapped.
func parseManifest(b []byte) ([]obj, error) {
	var (
		docs [][]byte
		cur  bytes.Buffer
	)

	r := bufio.NewReader(bytes.NewReader(b))

	for {
		line, err := r.ReadBytes('\n')
		if rest, ok := bytes.CutPrefix(line, []byte("---")); ok {
			if t := strings.TrimSpace(string(rest)); t != "" && !strings.HasPrefix(t, "#") {
				return nil, fmt.Errorf("invalid Yaml document separator: %s", strings.TrimSpace(string(line)))
			}

			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
		} else {
			cur.Write(line)
		}

		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
	}

	docs = append(docs, cur.Bytes())

	var out []obj

	for _, d := range docs {
		d = bytes.TrimSpace(d)
		if len(d) == 0 {
			continue
		}

		js, err := yaml.YAMLToJSON(d)
		if err != nil {
			return nil, fmt.Errorf("error converting manifest to JSON: %w", err)
		}

		if bytes.Equal(js, []byte("null")) || bytes.Equal(js, []byte("{}")) {
			continue
		}

		var o obj
		if err := json.Unmarshal(js, &o); err != nil {
			return nil, fmt.Errorf("error loading JSON manifest into unstructured: %w", err)
		}

		o, _ = integral(o).(obj)

		items, isList := o["items"].([]any)
		if !isList {
			out = append(out, o)

			continue
		}

		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("error unwrapping a List: list item is not Unstructured: %T", it)
			}

			out = append(out, m)
		}
	}

	return out, nil
}

// integral turns whole numbers into int64, as unstructured's JSON decoding
// does (k8s.io/apimachinery/pkg/runtime/converter.go: integers stay
// integers).
func integral(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = integral(e)
		}
	case []any:
		for i, e := range x {
			x[i] = integral(e)
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	}

	return v
}
