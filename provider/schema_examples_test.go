package provider

import (
	"strings"
	"testing"
)

// Every resource and function of the package shows example programs in all five languages
// (provider/docs), which the Registry renders as its "Example Usage" section.
func TestSchemaHasExamplesEverywhere(t *testing.T) {
	t.Parallel()
	s := loadSchema(t)
	check := func(tok, description string) {
		if !strings.Contains(description, "{{% examples %}}\n## Example Usage\n") {
			t.Errorf("%s has no Example Usage section: add its programs to provider/docs", tok)
			return
		}
		// One example section: the checked programs (a hand-written "## Example" beside
		// them showed the Registry and every SDK two example headings).
		if n := strings.Count("\n"+description, "\n## Example"); n != 1 {
			t.Errorf("%s has %d example headings, want the one Example Usage section", tok, n)
		}
		for _, fence := range []string{"typescript", "python", "go", "java", "yaml"} {
			if !strings.Contains(description, "```"+fence+"\n") {
				t.Errorf("%s has no %s example", tok, fence)
			}
		}
	}
	for tok, r := range s.Resources {
		check(tok, r.Description)
	}
	for tok, f := range s.Functions {
		check(tok, f.Description)
	}
}
