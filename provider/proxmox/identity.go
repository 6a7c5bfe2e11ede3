package proxmox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// Each resource's create carries an identity (see package pve, identity.go)
// that a later create of the same resource recognises. It is a hash of:
//
//   - the ID of the Pulumi provider resource serving it: a random UUID the
//     engine makes when it first creates the provider resource (the
//     stack's default provider, or an explicit one) and keeps in the
//     stack's state; the engine hands it to Configure. Two stacks, also of
//     the same project and stack name in two backends, have two of them;
//   - the resource's URN (project, stack, parent chain, type, name), which
//     tells the resources of one stack apart.
//
// So the identity is the same for every run of one stack, and differs
// between stacks and between resources. It is not a secret: a person who
// can read the state can compute it, as they can read the VMIDs.
//
// Limits: a stack whose provider resource is replaced (a new explicit
// provider) gets new identities, so a VM interrupted before that is not
// found; a stack copied with `pulumi stack export/import` shares its
// identities with the original (both then manage the same VMs). Without a
// provider ID (an engine older than the one that sends it), the URN alone
// is used, and two backends holding stacks of the same names could claim
// each other's interrupted VMs.

// identity is what a create knows about its resource.
type identity struct {
	// id is "" when the URN is unknown (a create outside the engine).
	id string
	// fresh: Check saw no old inputs, so the resource is not in the state.
	// A create that is not known to be fresh (a replacement) adopts only a
	// VM still being created, never one handed over already: that may be
	// the VM it replaces.
	fresh bool
	// held is the resource ID the state holds for it ("" when none seen).
	held string
}

// resourceIdentity is the identity of the create running with ctx. The
// URN (framework.WithURN), whether Check saw old inputs and the ID the
// state holds (framework.WithRequestFacts), and the provider resource's ID
// (framework.WithProviderInstance) are what infer's requests do not carry.
func resourceIdentity(ctx context.Context) identity {
	urn := framework.URN(ctx)
	if urn == "" {
		return identity{}
	}
	sum := sha256.Sum256([]byte("proxmoxtalos\x00" + framework.ProviderInstance() + "\x00" + string(urn)))
	return identity{id: hex.EncodeToString(sum[:10]), fresh: framework.CheckedFresh(urn), held: framework.DiffedID(urn)}
}
