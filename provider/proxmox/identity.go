package proxmox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	p "github.com/pulumi/pulumi-go-provider"

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

var instance struct {
	mu sync.Mutex
	id string
}

// SetProviderInstance records the ID of the provider resource this process
// serves, as Configure receives it.
func SetProviderInstance(id string) {
	instance.mu.Lock()
	defer instance.mu.Unlock()
	instance.id = id
}

func providerInstance() string {
	instance.mu.Lock()
	defer instance.mu.Unlock()
	return instance.id
}

// fresh records, per URN, whether its last Check had no old inputs: the
// resource is not in the state, so a create is its first and not a
// replacement of a VM the state still holds. held records the ID of the
// resource the state holds, as its last Diff saw it: a create never adopts
// that VM (it is the one a replacement replaces).
var fresh, held sync.Map

// WithIdentity records what the identity of a create (and of an update
// that finishes one) needs besides the URN (framework.WithURN hands that
// on) and infer's requests do not carry: whether Check saw old inputs, and
// the ID the state holds.
func WithIdentity(prov p.Provider) p.Provider {
	check, diff := prov.Check, prov.Diff
	prov.Check = func(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
		fresh.Store(req.Urn, req.State.Len() == 0)
		return check(ctx, req)
	}
	prov.Diff = func(ctx context.Context, req p.DiffRequest) (p.DiffResponse, error) {
		held.Store(req.Urn, req.ID)
		return diff(ctx, req)
	}
	return prov
}

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

// resourceIdentity is the identity of the create running with ctx.
func resourceIdentity(ctx context.Context) identity {
	urn := framework.URN(ctx)
	if urn == "" {
		return identity{}
	}
	sum := sha256.Sum256([]byte("proxmoxtalos\x00" + providerInstance() + "\x00" + string(urn)))
	f, _ := fresh.Load(urn)
	isFresh, _ := f.(bool)
	h, _ := held.Load(urn)
	heldID, _ := h.(string)
	return identity{id: hex.EncodeToString(sum[:10]), fresh: isFresh, held: heldID}
}
