package proxmox

import (
	"context"

	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// IdentityOf is the identity the creates of the resource with URN urn get.
func IdentityOf(urn presource.URN) string {
	return resourceIdentity(framework.ContextWithURN(context.Background(), urn)).id
}
