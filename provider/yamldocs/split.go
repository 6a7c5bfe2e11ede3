// Package yamldocs cuts a YAML stream into its documents' texts without a
// YAML parser, for the callers that parse each document once per process
// (issue 14: the nodes of a role share their large v1alpha1 document).
//
// Why a piece is one document of the stream: Split cuts only at lines that
// are exactly "---", and refuses a text with any other line a YAML reader
// could take as a marker or directive ("--- x", "...", "%"), or with what
// go-yaml treats as a line break or mark of its own ("\r", BOM, U+0085,
// U+2028, U+2029). A "---" inside a quoted or block scalar is a marker line
// only when it starts the line, and then YAML ends the document there too
// (a piece that no longer parses alone is the caller's to refuse). Every
// caller still checks that each piece parses as exactly one document and
// answers anything else the slow way, with the whole text.
package yamldocs

import "strings"

// Split cuts text at its "---" lines; ok false when the text has another
// line that could be a marker or directive, or a line break or mark other
// than "\n". Pieces of blank lines only are left out (configloader skips
// empty documents too; a piece of comments only is kept, and fails alone).
// Pieces are substrings of text.
func Split(text string) ([]string, bool) {
	if strings.ContainsAny(text, "\r\ufeff\u0085\u2028\u2029") {
		return nil, false
	}

	var pieces []string

	start := 0
	flush := func(end int) {
		if piece := text[start:end]; strings.TrimSpace(piece) != "" {
			pieces = append(pieces, piece)
		}
	}

	for at := 0; at < len(text); {
		end := strings.IndexByte(text[at:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += at
		}

		line := text[at:end]
		if strings.HasPrefix(line, "---") || strings.HasPrefix(line, "...") || strings.HasPrefix(line, "%") {
			if line != "---" {
				return nil, false
			}

			flush(at)
			start = min(end+1, len(text))
		}

		at = end + 1
	}

	flush(len(text))

	return pieces, true
}
