package leakscan

import (
	"fmt"
	"strings"
)

// Finding is a secret found in a text. It holds no part of the secret.
type Finding struct {
	Where  string // the text's name ("up --json stdout", "state")
	Line   int    // 1-based line of the first match
	Origin string // the secret's origin
	Length int    // the secret's length
}

func (f Finding) String() string {
	return fmt.Sprintf("%s, line %d: secret %s (%d characters)", f.Where, f.Line, f.Origin, f.Length)
}

// Scan reports every secret one of whose needles text contains, once per
// secret.
func Scan(where, text string, needles []Needle) []Finding {
	var out []Finding

	reported := map[*Secret]bool{}

	for _, n := range needles {
		if reported[n.Secret] {
			continue
		}

		i := strings.Index(text, n.Text)
		if i < 0 {
			continue
		}

		reported[n.Secret] = true
		out = append(out, Finding{
			Where: where, Line: strings.Count(text[:i], "\n") + 1, Origin: n.Secret.Origin, Length: len(n.Secret.Value),
		})
	}

	return out
}
