package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a spec: the input path it concerns and a
// message that says what is wrong and how to fix it.
type Problem struct {
	// Field is the component input path, e.g. "workerPools[1].nodes[0].address".
	Field   string
	Message string
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// Error lists every problem found in a spec, so a user fixes them in one go.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return "TalosCluster: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "TalosCluster: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.String())
	}
	return b.String()
}

// problems collects Problems while a spec is checked.
type problems struct {
	list []Problem
}

func (ps *problems) add(field, format string, args ...any) {
	ps.list = append(ps.list, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (ps *problems) any() bool { return len(ps.list) > 0 }

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &Error{Problems: ps.list}
}

func itoa(i int) string { return strconv.Itoa(i) }

// idx builds an indexed input path: idx("workerPools", 1) = "workerPools[1]".
func idx(path string, i int) string { return path + "[" + itoa(i) + "]" }
