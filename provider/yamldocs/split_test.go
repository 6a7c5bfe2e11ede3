package yamldocs

import (
	"reflect"
	"testing"
)

// The texts of talosconfig's patches and base configurations and of the
// configurations nodes answer (talosapi's loadShared): where each is cut,
// and which are refused. Both callers' own tests check that what they
// build from the pieces is what the whole text gives.
func TestSplit(t *testing.T) {
	t.Parallel()

	for _, c := range []struct {
		name string
		text string
		want []string
		ok   bool
	}{
		{"one document", "a: 1\n", []string{"a: 1\n"}, true},
		{"two documents", "a: 1\n---\nb: 2\n", []string{"a: 1\n", "b: 2\n"}, true},
		{"empty documents", "---\na: 1\n---\n\n---\nb: 2", []string{"a: 1\n", "b: 2"}, true},
		{"marker in block", "a: |\n  ---\n", []string{"a: |\n  ---\n"}, true},
		{"indented marker", "a: 1\n  ---\nb: 2\n", []string{"a: 1\n  ---\nb: 2\n"}, true},
		{"comment-only document", "a: 1\n---\n# nothing\n---\nb: 2\n", []string{"a: 1\n", "# nothing\n", "b: 2\n"}, true},
		{"null document", "a: 1\n---\nnull\n", []string{"a: 1\n", "null\n"}, true},
		{"marker inside a string", "a: \"x\n---\ny\"\n", []string{"a: \"x\n", "y\"\n"}, true},
		{"trailing marker", "a: 1\n---", []string{"a: 1\n"}, true},
		{"empty", "", nil, true},
		{"only markers", "---\n---\n", nil, true},
		{"marker with comment", "a: 1\n--- # c\nb: 2\n", nil, false},
		{"end marker", "a: 1\n...\n", nil, false},
		{"directive", "%YAML 1.2\n---\na: 1\n", nil, false},
		{"CRLF", "a: 1\r\n---\r\nb: 2\r\n", nil, false},
		{"BOM", "\ufeffa: 1\n", nil, false},
		{"NEL", "a: 1\u0085---\u0085b: 2\n", nil, false},
		{"line separator", "a: 1\u2028b: 2\n", nil, false},
		{"paragraph separator", "a: 1\u2029b: 2\n", nil, false},
	} {
		got, ok := Split(c.text)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Split(%q) = %q, %v; want %q, %v", c.name, c.text, got, ok, c.want, c.ok)
		}
	}
}
