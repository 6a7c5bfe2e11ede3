package pve

import (
	"context"
	"encoding/json"
	"net/url"
	"sync"
)

// privilegeCache holds what GET /access/permissions answered per ACL path,
// for the life of the provider process (one Pulumi operation).
type privilegeCache struct {
	mu    sync.Mutex
	paths map[string]map[string]bool
}

// Privileges returns the privileges the client's own token holds on an ACL
// path ("/vms/104", "/storage/local-lvm"), each with whether it propagates
// to the paths below, as Proxmox VE computes them
// (pve-access-control src/PVE/API2/AccessControl.pm permissions: any
// token may ask for its own; for a privilege-separated token they are what
// both the token's and its user's ACLs give). Answers are cached per path.
func (c *Client) Privileges(ctx context.Context, path string) (map[string]bool, error) {
	c.privs.mu.Lock()
	if got, ok := c.privs.paths[path]; ok {
		c.privs.mu.Unlock()
		return got, nil
	}
	c.privs.mu.Unlock()
	var raw map[string]map[string]json.Number
	err := DefaultRetry.Retry(ctx, "reading the API token's privileges on "+path, true, func(ctx context.Context) error {
		return c.get(ctx, "/access/permissions?path="+url.QueryEscape(path), &raw)
	})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for priv, propagate := range raw[path] {
		out[priv] = propagate.String() == "1"
	}
	c.privs.mu.Lock()
	if c.privs.paths == nil {
		c.privs.paths = map[string]map[string]bool{}
	}
	c.privs.paths[path] = out
	c.privs.mu.Unlock()
	return out, nil
}

// TokenID is the id of the API token the client uses, USER@REALM!TOKENID
// (never its secret).
func (c *Client) TokenID() string { return c.tokenID }
