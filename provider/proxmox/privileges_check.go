package proxmox

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// checkPrivileges asks Proxmox what the token holds on each path the needs
// name (GET /access/permissions?path=..., cached per provider process) and
// returns one failure per path where something is missing. A Proxmox that
// cannot answer (an old release, a proxy that hides the endpoint) skips the
// check with a warning: the calls themselves still fail with PVE's 403.
func checkPrivileges(ctx context.Context, c *pve.Client, needs []need) []p.CheckFailure {
	failures, err := privilegeFailures(c.TokenID(), needs, func(path string) (map[string]bool, error) {
		return c.Privileges(ctx, path)
	})
	if err != nil {
		enginelog.Logger(ctx).Warningf("could not read the API token's privileges (%v); they are not checked at preview, "+
			"a missing one fails the call that needs it", err)
		return nil
	}
	return failures
}

// planKeys are the config keys (and values) the inputs set on a new VM.
func planKeys(a VirtualMachineArgs) map[string]any {
	keys, err := createParams(a)
	if err != nil {
		return nil // validateVM reported it
	}
	return keys
}

// cloneSourceConfig is the config of the VM a clone copies, when it can be read
// (without VM.Audit on it, the needs report that instead).
func cloneSourceConfig(ctx context.Context, c *pve.Client, a VirtualMachineArgs, u unknowns) map[string]string {
	if a.Clone == nil || !u.known("clone.vmId") || !u.known("node") {
		return nil
	}
	node := a.Node
	if a.Clone.Node != nil && *a.Clone.Node != "" {
		node = *a.Clone.Node
	}
	cfg, err := c.VMConfig(ctx, pve.VMRef{Node: node, VMID: a.Clone.VMID})
	if err != nil {
		return nil
	}
	return cfg
}

// privilegeFailures evaluates needs against what lookup answers for a path
// and describes each path where the token lacks privileges: which ones,
// what for, and the pveum command that grants them.
func privilegeFailures(tokenID string, needs []need, lookup func(path string) (map[string]bool, error)) ([]p.CheckFailure, error) {
	type gap struct {
		input   string
		role    string
		inherit bool
		privs   map[string]bool
		whys    []string
		or      []string
	}
	gaps := map[string]*gap{}
	var order []string
	for _, n := range needs {
		have, err := lookup(n.Path)
		if err != nil {
			return nil, err
		}
		if n.holds(have) {
			continue
		}
		if n.Or != nil {
			alt, err := lookup(n.Or.Path)
			if err != nil {
				return nil, err
			}
			if n.Or.holds(alt) {
				continue
			}
		}
		g := gaps[n.Path]
		if g == nil {
			g = &gap{input: n.Input, role: n.Role, inherit: n.Inherit, privs: map[string]bool{}}
			gaps[n.Path] = g
			order = append(order, n.Path)
		}
		missing := n.missing(have)
		if n.Any {
			missing = []string{strings.Join(n.Privs, " or ")}
		}
		for _, m := range missing {
			g.privs[m] = true
		}
		g.whys = append(g.whys, strings.Join(missing, ", ")+" "+n.Why)
		if n.Or != nil {
			g.or = append(g.or, strings.Join(n.Or.Privs, " and ")+" on "+n.Or.Path)
		}
	}
	user, _, _ := strings.Cut(tokenID, "!")
	var out []p.CheckFailure
	for _, path := range order {
		g := gaps[path]
		privs := slices.Sorted(maps.Keys(g.privs))
		where := path
		if g.inherit {
			where += " (propagated to the VMs below it, as a VM without vmId gets a new id)"
		}
		msg := fmt.Sprintf("the API token %s lacks %s on %s: %s.", tokenID, strings.Join(privs, ", "), where,
			strings.Join(g.whys, "; "))
		if len(g.or) > 0 {
			msg += " (" + strings.Join(g.or, ", or ") + " would do too.)"
		}
		them := "them"
		if len(privs) == 1 {
			them = "it"
		}
		msg += fmt.Sprintf(" Grant %s with the role %s of the README's \"Proxmox privileges\" recipe: "+
			"`pveum acl modify %s --roles %s --tokens '%s'`; a token with privilege separation holds only what its "+
			"user holds too: `pveum acl modify %s --roles %s --users %s`", them, g.role, path, g.role, tokenID, path, g.role, user)
		for _, r := range recipeRoles {
			if r.Name == g.role && !strings.HasPrefix(r.Name, "PVE") {
				msg += fmt.Sprintf(" (create the role first if it does not exist: `pveum role add %s --privs \"%s\"`)",
					r.Name, strings.Join(r.Privs, ","))
			}
		}
		out = append(out, p.CheckFailure{Property: g.input, Reason: msg})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Property < out[j].Property })
	return out, nil
}
