package proxmox

import (
	"context"

	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// IdentityOf is the identity the creates of the resource with URN urn get.
func IdentityOf(urn presource.URN) string {
	return resourceIdentity(context.WithValue(context.Background(), urnKey{}, urn)).id
}
