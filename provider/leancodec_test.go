package provider

import (
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// The provider's imports leave framework's codec in place: a package that
// registers another "proto" codec in its init (siderolabs/proto-codec does)
// would silently take back what it saves in every child registration.
func TestLeanCodecSurvivesTheProvidersImports(t *testing.T) {
	if !framework.LeanCodecActive() {
		t.Error(`gRPC's "proto" codec is not framework's leanCodec: a package the provider imports registers its own after it; find it (go list -deps) and register leanCodec after it, e.g. from main`)
	}
}
