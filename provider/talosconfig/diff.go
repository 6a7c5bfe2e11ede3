package talosconfig

import (
	"maps"
	"reflect"
	"slices"
	"sort"
)

// pathChange is one changed path: the document it is in ("" for v1alpha1)
// and its full rendered path.
type pathChange struct {
	doc  string
	path string
}

// ChangedPaths lists the paths that differ between two configurations, in a
// stable order (v1alpha1 first, then other documents by id; keys sorted;
// list items by index). A document added or removed as a whole is one path,
// its id ("Layer2VIPConfig/192.168.1.220"); a map or list item added or
// removed as a whole is its own path; a changed leaf is its path. Secret
// values are compared but never returned.
func ChangedPaths(oldYAML, newYAML string) ([]string, error) {
	changes, err := diffConfigs(oldYAML, newYAML)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range changes {
		out = append(out, c.path)
	}
	return out, nil
}

func diffConfigs(oldYAML, newYAML string) ([]pathChange, error) {
	oldDocs, err := parseDocs(oldYAML)
	if err != nil {
		return nil, err
	}
	newDocs, err := parseDocs(newYAML)
	if err != nil {
		return nil, err
	}
	oldByID, newByID := indexDocs(oldDocs), indexDocs(newDocs)
	ids := make([]string, 0, len(oldByID)+len(newByID))
	for id := range oldByID {
		ids = append(ids, id)
	}
	for id := range newByID {
		if _, ok := oldByID[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids) // "" (v1alpha1) sorts first
	var out []pathChange
	for _, id := range ids {
		o, inOld := oldByID[id]
		n, inNew := newByID[id]
		if !inOld || !inNew {
			out = append(out, pathChange{doc: id, path: displayDocID(id)})
			continue
		}
		diffNodes(o, n, nil, func(parts []any) {
			out = append(out, pathChange{doc: id, path: joinPath(id, parts)})
		})
	}
	return out, nil
}

func indexDocs(docs []doc) map[string]any {
	m := make(map[string]any, len(docs))
	for _, d := range docs {
		m[d.id] = d.body
	}
	return m
}

func diffNodes(a, b any, parts []any, report func([]any)) {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap && len(am) > 0 && len(bm) > 0 {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			av, inA := am[k]
			bv, inB := bm[k]
			if !inA || !inB {
				report(appendPart(parts, k))
				continue
			}
			diffNodes(av, bv, appendPart(parts, k), report)
		}
		return
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if aIsList && bIsList && len(al) > 0 && len(bl) > 0 {
		for i := 0; i < max(len(al), len(bl)); i++ {
			if i >= len(al) || i >= len(bl) {
				report(appendPart(parts, i))
				continue
			}
			diffNodes(al[i], bl[i], appendPart(parts, i), report)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		report(parts)
	}
}
