package provider

import (
	"regexp"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
)

// Issue 15: version strings are written one way in every description, `v1.35.2`
// (as Talos and Kubernetes tag their releases); a bare `1.35.2` appears only where
// a description says it means the same.
func TestSchemaWritesVersionsWithV(t *testing.T) {
	t.Parallel()
	resp, err := server(t).GetSchema(p.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	bare := regexp.MustCompile("`[0-9]+\\.[0-9]+(\\.[0-9]+)?`")
	for _, loc := range bare.FindAllStringIndex(resp.Schema, -1) {
		after := resp.Schema[loc[1]:min(len(resp.Schema), loc[1]+20)]
		if !strings.HasPrefix(after, " is the same") {
			from := max(0, loc[0]-60)
			t.Errorf("a version without its v: ...%s...", resp.Schema[from:min(len(resp.Schema), loc[1]+20)])
		}
	}
	if !strings.Contains(resp.Schema, "`v1.35.2`") {
		t.Errorf("no version written with its v: the test checks nothing")
	}
}
