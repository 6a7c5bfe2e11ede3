package version

import "testing"

func TestFromModuleVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"v0.2.0":                             "0.2.0",
		"v1.0.0-rc.1":                        "1.0.0-rc.1",
		"(devel)":                            unset,
		"":                                   unset,
		"v0.0.0-20261125120000-0123456789ab": "0.0.0-20261125120000-0123456789ab",
	} {
		if got := fromModuleVersion(in); got != want {
			t.Errorf("fromModuleVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
