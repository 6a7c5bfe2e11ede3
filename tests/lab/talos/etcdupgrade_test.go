package talos

import "testing"

// The releases that read preserve in the check's condition: v1.12.9+,
// v1.13.4+, v1.14 (siderolabs/talos 89e307e58 and its backports).
func TestSkipsEtcdCheckOnPreserve(t *testing.T) {
	t.Parallel()

	for version, want := range map[string]bool{
		"v1.8.0": false, "v1.11.5": false, "v1.12.5": false, "v1.12.8": false, "v1.12.9": true,
		"v1.13.0": false, "v1.13.3": false, "v1.13.4": true, "v1.14.0-alpha.2": true, "v1.14.1": true,
		"v2.0.0": true, "not a version": false,
	} {
		if got := skipsEtcdCheckOnPreserve(version); got != want {
			t.Errorf("skipsEtcdCheckOnPreserve(%q) = %v, want %v", version, got, want)
		}
	}
}
