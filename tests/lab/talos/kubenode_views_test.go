package talos

import (
	"fmt"
	"slices"
	"testing"
)

// The agent's round skips the API when the views equal the last round's
// (kubeAgent.round's digest): views in the map's order made every tick a
// full round, about a core of the machine idle at 60 nodes.
func TestKubeletViewsStableOrder(t *testing.T) {
	t.Parallel()

	s := &Sim{}
	c := &cluster{kubeNodes: map[string]*kubeNode{}}

	for i := range 40 {
		name := fmt.Sprintf("node-%02d", 39-i)
		c.kubeNodes[name] = &kubeNode{name: name}
	}

	names := func() []string {
		var out []string
		for _, v := range s.kubeletViews(c) {
			out = append(out, v.name)
		}

		return out
	}

	first := names()
	if !slices.IsSorted(first) {
		t.Fatalf("views not by name: %v", first)
	}

	for range 5 {
		if got := names(); !slices.Equal(got, first) {
			t.Fatalf("views changed order without a change:\n%v\n%v", first, got)
		}
	}
}
