package provider

import (
	"slices"
	"testing"
)

func TestCapLogVerbosity(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ in, want []string }{
		{[]string{"bin", "--logtostderr", "-v=9", "127.0.0.1:1234"}, []string{"bin", "--logtostderr", "-v=8", "127.0.0.1:1234"}},
		{[]string{"bin", "--v=11"}, []string{"bin", "--v=8"}},
		{[]string{"bin", "-v", "10", "127.0.0.1:1"}, []string{"bin", "-v", "8", "127.0.0.1:1"}},
		{[]string{"bin", "-v=3", "127.0.0.1:1"}, []string{"bin", "-v=3", "127.0.0.1:1"}},
		{[]string{"bin", "127.0.0.1:1"}, []string{"bin", "127.0.0.1:1"}},
	} {
		in := slices.Clone(tc.in)
		if got := CapLogVerbosity(in); !slices.Equal(got, tc.want) || !slices.Equal(in, tc.in) {
			t.Errorf("CapLogVerbosity(%v) = %v (input now %v), want %v", tc.in, got, in, tc.want)
		}
	}
}
