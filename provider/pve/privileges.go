package pve

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"sync"
)

// privilegeCache holds what GET /access/permissions answered, for the life
// of the provider process (one Pulumi operation): the whole tree, read once,
// and the single paths the tree does not answer.
type privilegeCache struct {
	// mu is held while Proxmox is asked: concurrent Checks wait for one
	// answer instead of asking the same question each.
	mu        sync.Mutex
	treeTried bool
	paths     map[string]map[string]bool
}

// treeDefaultPaths are the paths Proxmox always evaluates for the whole-tree
// answer (pve-access-control src/PVE/RPCEnvironment.pm
// get_effective_permissions: "default / top level paths"). The answer leaves
// out every path where the token holds nothing, so one of these missing from
// it holds nothing.
var treeDefaultPaths = []string{"/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms"}

// Privileges returns the privileges the client's own token holds on an ACL
// path ("/vms/104", "/storage/local-lvm"), each with whether it propagates
// to the paths below, as Proxmox VE computes them
// (pve-access-control src/PVE/API2/AccessControl.pm permissions: any
// token may ask for its own; for a privilege-separated token they are what
// both the token's and its user's ACLs give).
//
// The first call reads the whole tree (GET /access/permissions without
// path): Proxmox answers it with permissions() of every default path, every
// path that has an ACL and every pool member (RPCEnvironment.pm
// get_effective_permissions), which is exactly what asking each of those
// paths would answer. A path the tree does not list (one with no ACL of its
// own, such as /nodes/pve1 under an ACL on /nodes) is asked on its own:
// its privileges cannot be read off its parent's, because the tree also
// leaves out paths whose ACL grants nothing (NoAccess) and, on one path, a
// user's ACL hides a group's (AccessControl.pm roles), so what a parent
// lists may not reach it. Answers are kept per path.
func (c *Client) Privileges(ctx context.Context, path string) (map[string]bool, error) {
	c.privs.mu.Lock()
	defer c.privs.mu.Unlock()
	if c.privs.paths == nil {
		c.privs.paths = map[string]map[string]bool{}
	}
	if got, ok := c.privs.paths[path]; ok {
		return got, nil
	}
	if !c.privs.treeTried {
		c.privs.treeTried = true
		// a tree that cannot be read (a proxy that hides it) leaves
		// every path to its own read
		if tree, err := c.readPrivileges(ctx, ""); err == nil {
			for _, p := range treeDefaultPaths {
				if _, ok := tree[p]; !ok {
					tree[p] = map[string]bool{}
				}
			}
			maps.Copy(c.privs.paths, tree)
			if got, ok := c.privs.paths[path]; ok {
				return got, nil
			}
		}
	}
	one, err := c.readPrivileges(ctx, path)
	if err != nil {
		return nil, err
	}
	got := one[path]
	if got == nil {
		got = map[string]bool{}
	}
	c.privs.paths[path] = got
	return got, nil
}

// readPrivileges asks GET /access/permissions for path, or for the whole
// tree when path is "".
func (c *Client) readPrivileges(ctx context.Context, path string) (map[string]map[string]bool, error) {
	var raw map[string]map[string]json.Number
	what, query := "the API token's privileges", "/access/permissions"
	if path != "" {
		what, query = what+" on "+path, query+"?path="+url.QueryEscape(path)
	}
	// raw: Client.Permissions decodes into IntOrBool, which parses the raw
	// token and so refuses a propagate flag sent as the string "1"
	err := DefaultRetry.Retry(ctx, "reading "+what, true, func(ctx context.Context) error {
		return c.get(ctx, query, &raw)
	})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for p, privs := range raw {
		m := map[string]bool{}
		for priv, propagate := range privs {
			m[priv] = propagate.String() == "1"
		}
		out[p] = m
	}
	return out, nil
}

// TokenID is the id of the API token the client uses, USER@REALM!TOKENID
// (never its secret).
func (c *Client) TokenID() string { return c.tokenID }
