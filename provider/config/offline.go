package config

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
)

// Offline preview (offlinePreview / PROXMOXTALOS_OFFLINE_PREVIEW): CI runners
// on hosted infrastructure usually cannot reach a home or office Proxmox VE,
// yet a pull request deserves a preview. With the setting on, the provider
// connects to nothing: resources are diffed from their state and inputs, the
// TalosCluster component plans from the stack's state (package cluster,
// offline.go), and every check that needs Proxmox or the nodes is skipped and
// said so. Nothing may change in that mode: a preview only (WithOfflineGuard).

// offline is set by Configure. The engine starts one provider process per
// provider configuration, so a process-wide flag is that configuration's.
var offline atomic.Bool

// Offline reports whether this provider was configured for offline previews.
func Offline() bool { return offline.Load() }

// SetOfflineForTest sets the mode without a Configure; tests only.
func SetOfflineForTest(on bool) { offline.Store(on) }

const offlineSetting = "`proxmoxtalos:offlinePreview` (or " + EnvOfflinePreview + ")"

// errOffline: code that would contact Proxmox asked for the client although
// the provider is offline. Every such path checks Offline first; this is the
// guard if one does not.
var errOffline = errors.New("the provider is configured for offline previews with " + offlineSetting +
	" and does not contact Proxmox VE")

// Refusal is the error for an operation that would change or read the real
// infrastructure (op: "create VM demo-cp-1", "refresh").
func Refusal(op string) error {
	return fmt.Errorf("cannot %s: %s is on, which plans previews from the stack's state without contacting Proxmox VE "+
		"or the Talos nodes and never changes anything; nothing was changed. Run `pulumi up` (or destroy, refresh) "+
		"without it, where Proxmox VE is reachable: unset %s and run `pulumi config rm proxmoxtalos:offlinePreview` "+
		"if the stack sets it", op, offlineSetting, EnvOfflinePreview)
}

// Check is one class of checks an offline preview skips. Each is said once
// per resource (or once per TalosCluster for all of its resources) as a
// warning, so that a reviewer knows what the preview did not look at.
type Check string

// The classes, worded as the warning says them after "not checked: ".
const (
	CheckPrivileges Check = "the API token's Proxmox privileges (GET /access/permissions)"
	CheckInventory  Check = "the inputs against the Proxmox cluster: nodes, bridges, storages, pools, clone sources, " +
		"free VMIDs, files already on a storage"
	CheckDrift Check = "the VMs' live state: stopped, deleted or renamed outside Pulumi, offline Proxmox nodes, " +
		"memory hotplug (a memory change is said to need a restart)"
	CheckCapacity Check = "the hosts' free memory and CPUs for placing new or larger VMs"
	CheckNodes    Check = "what the Talos nodes run (versions, active configuration, cluster members): taken from the " +
		"stack's state, as the last update left them; a Kubernetes upgrade is not checked for objects in API versions it removes"
	CheckClusterVMs Check = "the cluster's VMs in Proxmox: the cluster is planned from the VMs in the stack's state"
)

// Warning is the text of the warning for a skipped class.
func (c Check) Warning() string {
	return "offline preview (proxmoxtalos:offlinePreview, " + EnvOfflinePreview + "): not checked: " + string(c)
}

type quietKey struct{}

// Skipped warns, on the resource of ctx, that the offline preview skipped
// these checks; nothing for a TalosCluster's own resources, whose component
// says it once for all of them (quietKey, set by WithOfflineGuard).
func Skipped(ctx context.Context, checks ...Check) {
	if quiet, _ := ctx.Value(quietKey{}).(bool); quiet {
		return
	}
	for _, c := range checks {
		enginelog.Logger(ctx).Warning(c.Warning())
	}
}

// componentChild reports whether urn's resource is a TalosCluster's.
func componentChild(urn resource.URN) bool {
	return urn.IsValid() && strings.Contains(string(urn.QualifiedType()), "proxmoxtalos:index:TalosCluster$")
}

// WithOfflineGuard refuses, in offline mode, every operation that would
// change or read the infrastructure: a create or update that is not a
// preview, a delete, a read (refresh, import). The engine tells a provider
// whether a create or update is a preview, but not its Configure or Check:
// `pulumi up` is refused at its first change (and a TalosCluster before it
// registers anything: see cluster.Construct).
func WithOfflineGuard(prov p.Provider) p.Provider {
	check, diff, create, update, del, read := prov.Check, prov.Diff, prov.Create, prov.Update, prov.Delete, prov.Read
	prov.Check = func(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
		return check(context.WithValue(ctx, quietKey{}, componentChild(req.Urn)), req)
	}
	prov.Diff = func(ctx context.Context, req p.DiffRequest) (p.DiffResponse, error) {
		return diff(context.WithValue(ctx, quietKey{}, componentChild(req.Urn)), req)
	}
	prov.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
		if Offline() && !req.DryRun {
			return p.CreateResponse{}, Refusal("create " + describe(req.Urn))
		}
		return create(ctx, req)
	}
	prov.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
		if Offline() && !req.DryRun {
			return p.UpdateResponse{}, Refusal("update " + describe(req.Urn))
		}
		return update(ctx, req)
	}
	prov.Delete = func(ctx context.Context, req p.DeleteRequest) error {
		if Offline() {
			return Refusal("delete " + describe(req.Urn))
		}
		return del(ctx, req)
	}
	prov.Read = func(ctx context.Context, req p.ReadRequest) (p.ReadResponse, error) {
		if Offline() {
			return p.ReadResponse{}, Refusal("read " + describe(req.Urn) + " from Proxmox VE or its node (refresh, import)")
		}
		return read(ctx, req)
	}
	return prov
}

func describe(urn resource.URN) string {
	if !urn.IsValid() {
		return "a resource"
	}
	return string(urn.Type().Name()) + " " + urn.Name()
}
