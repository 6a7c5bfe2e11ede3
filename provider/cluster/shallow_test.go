package cluster

import (
	"strings"
	"testing"
)

// Each child is registered with a call stack of a few frames, none of them
// Construct's or the layers under it (registerShallow): the SDK sends every
// frame and the engine keeps them in the state.
func TestChildrenRegisterWithAShortStack(t *testing.T) {
	t.Parallel()
	rec, _, err := construct(t, &fakeInventory{hosts: threeHosts()}, baseInputs())
	must(t, err)
	children := 0
	for _, r := range rec.regs {
		if r.typ == "TalosCluster" {
			continue
		}
		children++
		if len(r.stack) == 0 || len(r.stack) > 3 {
			t.Errorf("%s sent a stack of %d frames, want 1 to 3:\n  %s", r.key(), len(r.stack), strings.Join(r.stack, "\n  "))
		}
		for _, f := range r.stack {
			if strings.Contains(f, "fanout.go") || strings.Contains(f, "component.go") || strings.Contains(f, "pulumi-go-provider") {
				t.Errorf("%s sent the frame %s", r.key(), f)
			}
		}
	}
	if children == 0 {
		t.Fatal("no child registered")
	}
}
