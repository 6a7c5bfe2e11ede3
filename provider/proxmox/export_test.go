package proxmox

import (
	"context"
	"time"

	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// IdentityOf is the identity the creates of the resource with URN urn get.
func IdentityOf(urn presource.URN) string {
	return resourceIdentity(framework.ContextWithURN(context.Background(), urn)).id
}

// SetAdoptionMaxAge sets how old an inventory read the creates always
// share, until restore is called (tests that change it must not run in
// parallel).
func SetAdoptionMaxAge(d time.Duration) (restore func()) {
	old := adoptionMaxAge
	adoptionMaxAge = d
	return func() { adoptionMaxAge = old }
}

// CreatesToAwait is createsToAwait.
func CreatesToAwait(unsettled []pve.ClusterVM, node string) []pve.ClusterVM {
	return createsToAwait(unsettled, node)
}
