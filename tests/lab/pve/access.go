package pve

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// The access model follows pve-access-control (PVE 9.1, commit df0a60e,
// libpve-access-control 9.0.5): users and their API tokens, roles made of
// privileges, ACLs on paths, evaluated like src/PVE/AccessControl.pm roles()
// and src/PVE/RPCEnvironment.pm permissions().

// privGroups is AccessControl.pm's $privgroups: per category, the
// privileges only root should get, those of the admin role, of the user
// role, and of the auditor.
var privGroups = []struct {
	cat                      string
	root, admin, user, audit []string
}{
	{"VM", nil,
		[]string{"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType",
			"VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.GuestAgent.Unrestricted", "VM.Migrate",
			"VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback"},
		[]string{"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup", "VM.GuestAgent.FileRead",
			"VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite", "VM.PowerMgmt"},
		[]string{"VM.Audit", "VM.GuestAgent.Audit"}},
	{"Sys", []string{"Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork"},
		[]string{"Sys.Console", "Sys.Syslog"}, nil, []string{"Sys.Audit"}},
	{"Datastore", nil, []string{"Datastore.Allocate", "Datastore.AllocateTemplate"},
		[]string{"Datastore.AllocateSpace"}, []string{"Datastore.Audit"}},
	{"SDN", nil, []string{"SDN.Allocate", "SDN.Audit"}, []string{"SDN.Use"}, []string{"SDN.Audit"}},
	{"User", []string{"Realm.Allocate"}, []string{"User.Modify", "Group.Allocate", "Realm.AllocateUser"}, nil, nil},
	{"Pool", nil, []string{"Pool.Allocate"}, []string{"Pool.Audit"}, []string{"Pool.Audit"}},
	{"Mapping", nil, []string{"Mapping.Modify"}, []string{"Mapping.Use"}, []string{"Mapping.Audit"}},
}

// validPrivs are all privileges PVE knows; builtinRoles its predefined roles
// (create_roles: NoAccess, Administrator, PVEAdmin, PVE<cat>Admin,
// PVE<cat>User where the category has user privileges, PVEAuditor,
// PVETemplateUser).
var (
	validPrivs   = map[string]bool{"Permissions.Modify": true}
	builtinRoles = map[string]map[string]bool{"NoAccess": {}, "Administrator": validPrivs}
)

func init() {
	add := func(role string, privs ...string) {
		if builtinRoles[role] == nil {
			builtinRoles[role] = map[string]bool{}
		}
		for _, p := range privs {
			builtinRoles[role][p] = true
		}
	}
	for _, g := range privGroups {
		for _, list := range [][]string{g.root, g.admin, g.user, g.audit} {
			for _, p := range list {
				validPrivs[p] = true
			}
		}
		for _, list := range [][]string{g.admin, g.user, g.audit} {
			add("PVE"+g.cat+"Admin", list...)
			add("PVEAdmin", list...)
		}
		if len(g.user) > 0 {
			add("PVE"+g.cat+"User", g.user...)
			add("PVE"+g.cat+"User", g.audit...)
		}
		add("PVEAuditor", g.audit...)
	}
	delete(builtinRoles["PVEAdmin"], "Mapping.Modify")
	add("PVETemplateUser", "VM.Clone", "VM.Audit")
}

// Identifier syntax: PVE/Auth/Plugin.pm $user_regex, $realm_regex,
// $groupname_regex and AccessControl.pm $token_full_regex.
var (
	userIDRE  = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+$`)
	tokenIDRE = regexp.MustCompile(`^([^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+)!([A-Za-z][A-Za-z0-9.\-_]+)$`)
	groupIDRE = regexp.MustCompile(`^[A-Za-z0-9.\-_]+$`)
	roleIDRE  = regexp.MustCompile(`^[A-Za-z0-9.\-_]+$`)
)

// splitTokenID is split_tokenid: "user@realm!name" into user and name.
func splitTokenID(id string) (user, name string, ok bool) {
	m := tokenIDRE.FindStringSubmatch(id)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

type accessUser struct {
	enabled bool
	expire  int64 // unix seconds, 0: never
	groups  map[string]bool
	tokens  map[string]*apiToken
}

type apiToken struct {
	secret  string
	privsep bool
	expire  int64
}

// aclNode is one path segment of the ACL tree (acl_root): who holds which
// roles here, each with its propagate flag.
type aclNode struct {
	children              map[string]*aclNode
	users, groups, tokens map[string]map[string]bool
}

func (n *aclNode) child(seg string, create bool) *aclNode {
	if n == nil {
		return nil
	}
	c := n.children[seg]
	if c == nil && create {
		if n.children == nil {
			n.children = map[string]*aclNode{}
		}
		c = &aclNode{users: map[string]map[string]bool{}, groups: map[string]map[string]bool{}, tokens: map[string]map[string]bool{}}
		n.children[seg] = c
	}
	return c
}

// access is user.cfg minus the pools (the lab keeps those with the VMs).
type access struct {
	users  map[string]*accessUser
	groups map[string]bool
	roles  map[string]map[string]bool // custom roles; built-in ones are builtinRoles
	acl    *aclNode
}

func newAccess() *access {
	return &access{
		users:  map[string]*accessUser{"root@pam": {enabled: true, groups: map[string]bool{}, tokens: map[string]*apiToken{}}},
		groups: map[string]bool{}, roles: map[string]map[string]bool{},
		acl: &aclNode{users: map[string]map[string]bool{}, groups: map[string]map[string]bool{}, tokens: map[string]map[string]bool{}},
	}
}

func (a *access) role(name string) (map[string]bool, bool) {
	if r, ok := builtinRoles[name]; ok {
		return r, true
	}
	r, ok := a.roles[name]
	return r, ok
}

// aclSegments splits an ACL path like AccessControl.pm roles() does:
// "/" is the root alone, "/vms/100" the root, "vms", "100" (Perl's split
// drops trailing empty fields).
func aclSegments(path string) []string {
	if path == "/" {
		return []string{""}
	}
	segs := strings.Split(path, "/")
	for len(segs) > 1 && segs[len(segs)-1] == "" {
		segs = segs[:len(segs)-1]
	}
	return segs
}

// roles is AccessControl.pm roles(): walking the path from the root, a
// level's entries for the token, else the user, else the user's groups
// replace what was found above; entries above the last level count only
// when they propagate. NoAccess wins over everything. The values are the
// propagate flags.
func (a *access) rolesFor(id, path string) map[string]bool {
	roles := map[string]bool{}
	segs := aclSegments(path)
	n := a.acl
	for i, seg := range segs {
		final := i == len(segs)-1
		if seg != "" {
			n = n.child(seg, false)
		}
		if n == nil {
			break
		}
		pick := func(ri map[string]bool) map[string]bool {
			var out map[string]bool
			for role, propagate := range ri {
				if final || propagate {
					if out == nil {
						out = map[string]bool{}
					}
					out[role] = propagate
				}
			}
			return out
		}
		if nw := pick(n.tokens[id]); nw != nil {
			roles = nw
			continue
		}
		if nw := pick(n.users[id]); nw != nil {
			roles = nw
			continue
		}
		var nw map[string]bool
		if u := a.users[id]; u != nil {
			for g, ri := range n.groups {
				if !u.groups[g] {
					continue
				}
				for role, propagate := range pick(ri) {
					if nw == nil {
						nw = map[string]bool{}
					}
					nw[role] = propagate
				}
			}
		}
		if nw != nil {
			roles = nw
		}
	}
	if p, ok := roles["NoAccess"]; ok {
		return map[string]bool{"NoAccess": p}
	}
	return roles
}

// permsLocked is RPCEnvironment.pm permissions(): the privileges id (a user
// or a token) holds on path, each with its propagate flag. root@pam holds
// all; a token without privilege separation holds its user's; a token with
// it holds what its own ACLs give and its user also holds (for root@pam's
// tokens only the token's ACLs count). Pools give their roles to their
// members' /vms/<vmid> and /storage/<id> paths, without propagation.
func (s *Server) permsLocked(id, path string) map[string]bool {
	if id == "root@pam" {
		out := map[string]bool{}
		for p := range validPrivs {
			out[p] = true
		}
		return out
	}
	if path == "" {
		// an ACL path that does not normalize: permissions() warns and
		// finds nothing
		return map[string]bool{}
	}
	a := s.access
	user, name, isToken := splitTokenID(id)
	var userPerms map[string]bool
	if isToken {
		u := a.users[user]
		if u == nil || u.tokens[name] == nil {
			return map[string]bool{}
		}
		userPerms = s.permsLocked(user, path)
		if !u.tokens[name].privsep {
			return userPerms
		}
	} else if a.users[id] == nil {
		return map[string]bool{}
	}
	roles := a.rolesFor(id, path)
	if _, denied := roles["NoAccess"]; !denied {
		if poolRoles := s.poolRolesLocked(id, path); poolRoles["NoAccess"] {
			roles = map[string]bool{"NoAccess": false}
		} else {
			for r := range poolRoles {
				if _, ok := roles[r]; !ok {
					roles[r] = false
				}
			}
		}
	}
	privs := map[string]bool{}
	for r, propagate := range roles {
		set, _ := a.role(r)
		for p := range set {
			privs[p] = privs[p] || propagate
		}
	}
	if isToken && user != "root@pam" {
		for p := range privs {
			up, ok := userPerms[p]
			if !ok {
				delete(privs, p)
				continue
			}
			privs[p] = up && privs[p]
		}
	}
	return privs
}

// poolRolesLocked: the roles id holds on the pool that has path
// (/vms/<vmid> or /storage/<id>) as a member.
func (s *Server) poolRolesLocked(id, path string) map[string]bool {
	out := map[string]bool{}
	for pid, p := range s.pools {
		member := false
		if vmid, ok := strings.CutPrefix(path, "/vms/"); ok {
			for v := range p.vms {
				member = member || fmt.Sprint(v) == vmid
			}
		} else if sid, ok := strings.CutPrefix(path, "/storage/"); ok {
			member = p.storage[sid]
		}
		if !member {
			continue
		}
		for r := range s.access.rolesFor(id, "/pool/"+pid) {
			out[r] = true
		}
	}
	return out
}

// permError is raise_perm_exc (pve-common src/PVE/Exception.pm): a 403
// "Permission check failed (<what>)".
func permError(what string) *apiError {
	msg := "Permission check failed"
	if what != "" {
		msg += " (" + what + ")"
	}
	return &apiError{code: http.StatusForbidden, msg: msg + "\n"}
}

// checkLocked is RPCEnvironment.pm check: every privilege on path.
func (s *Server) checkLocked(id, path string, privs ...string) error {
	perms := s.permsLocked(id, path)
	for _, p := range privs {
		if _, ok := perms[p]; !ok {
			return permError(path + ", " + p)
		}
	}
	return nil
}

// checkAnyLocked is check_any: one of the privileges on path.
func (s *Server) checkAnyLocked(id, path string, privs ...string) error {
	perms := s.permsLocked(id, path)
	for _, p := range privs {
		if _, ok := perms[p]; ok {
			return nil
		}
	}
	return permError(path + ", " + strings.Join(privs, "|"))
}

// hasLocked is check with noerr: whether id holds priv on path.
func (s *Server) hasLocked(id, path, priv string) bool {
	_, ok := s.permsLocked(id, path)[priv]
	return ok
}

// checkVMLocked is check_vm_perm: the privileges on the pool the VM is
// created in, else on /vms/<vmid>.
func (s *Server) checkVMLocked(id string, vmid int, pool string, any bool, privs ...string) error {
	check := s.checkLocked
	if any {
		check = s.checkAnyLocked
	}
	if pool != "" && check(id, "/pool/"+pool, privs...) == nil {
		return nil
	}
	return check(id, fmt.Sprintf("/vms/%d", vmid), privs...)
}

// checkPermModifyLocked is check_perm_modify: Permissions.Modify, or the
// allocation privilege of the object the path names.
func (s *Server) checkPermModifyLocked(id, path string) error {
	if path == "" {
		return s.checkLocked(id, "/access", "Permissions.Modify")
	}
	privs := []string{"Permissions.Modify"}
	switch {
	case strings.HasPrefix(path, "/storage/"):
		privs = append(privs, "Datastore.Allocate")
	case strings.HasPrefix(path, "/vms/"):
		privs = append(privs, "VM.Allocate")
	case strings.HasPrefix(path, "/pool/"):
		privs = append(privs, "Pool.Allocate")
	}
	return s.checkAnyLocked(id, path, privs...)
}

// checkSDNBridgeLocked is check_sdn_bridge: the privileges on the bridge
// of zone, or on one of its VLANs.
func (s *Server) checkSDNBridgeLocked(id, zone, bridge string, privs ...string) bool {
	path := "/sdn/zones/" + zone + "/" + bridge
	if s.checkAnyLocked(id, path, privs...) == nil {
		return true
	}
	n := s.access.acl
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		n = n.child(seg, false)
	}
	if n == nil {
		return false
	}
	for vlan := range n.children {
		if s.checkAnyLocked(id, path+"/"+vlan, privs...) == nil {
			return true
		}
	}
	return false
}

// effectivePermsLocked is get_effective_permissions: the privileges id holds
// on the top-level paths, every path with an ACL and every pool member,
// leaving out paths without any.
func (s *Server) effectivePermsLocked(id string) map[string]map[string]bool {
	paths := map[string]bool{"/": true, "/access": true, "/access/groups": true, "/nodes": true,
		"/pool": true, "/sdn": true, "/storage": true, "/vms": true}
	var walk func(prefix string, n *aclNode)
	walk = func(prefix string, n *aclNode) {
		for seg, c := range n.children {
			p := prefix + "/" + seg
			if len(c.users)+len(c.groups)+len(c.tokens) > 0 {
				paths[p] = true
			}
			walk(p, c)
		}
	}
	walk("", s.access.acl)
	for _, p := range s.pools {
		for v := range p.vms {
			paths[fmt.Sprintf("/vms/%d", v)] = true
		}
		for st := range p.storage {
			paths["/storage/"+st] = true
		}
	}
	out := map[string]map[string]bool{}
	for p := range paths {
		if perms := s.permsLocked(id, p); len(perms) > 0 {
			out[p] = perms
		}
	}
	return out
}

// normalizeACLPath is AccessControl.pm normalize_path; "" when the path has
// characters an ACL path cannot.
var aclPathChars = regexp.MustCompile(`^[[:alnum:].\-_/]+$`)

func normalizeACLPath(p string) string {
	if p == "" {
		return ""
	}
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if !aclPathChars.MatchString(p) {
		return ""
	}
	return p
}

// validACLPath is AccessControl.pm check_path: the paths an ACL may be set on.
var validACLPath = regexp.MustCompile(`^(?:/|/access|/access/groups|/access/groups/[[:alnum:].\-_]+|/access/realm|/access/realm/[[:alnum:].\-_]+|` +
	`/nodes|/nodes/[[:alnum:].\-_]+|/pool|/pool/[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}|` +
	`/sdn|/sdn/controllers|/sdn/controllers/[[:alnum:]_\-]+|/sdn/dns|/sdn/dns/[[:alnum:]]+|/sdn/fabrics|/sdn/fabrics/[[:alnum:]]+|` +
	`/sdn/ipams|/sdn/ipams/[[:alnum:]]+|/sdn/zones|/sdn/zones/[[:alnum:].\-_]+|/sdn/zones/[[:alnum:].\-_]+/[[:alnum:].\-_]+|` +
	`/sdn/zones/[[:alnum:].\-_]+/[[:alnum:].\-_]+/[1-9][0-9]{0,3}|/storage|/storage/[[:alnum:].\-_]+|/vms|/vms/[1-9][0-9]{2,}|` +
	`/mapping|/mapping/[[:alnum:].\-_]+|/mapping/[[:alnum:].\-_]+/[[:alnum:].\-_]+)$`)

// removeVMAccessLocked is remove_vm_access: a destroyed VM's ACLs and pool
// membership go with it.
func (s *Server) removeVMAccessLocked(vmid int) {
	if vms := s.access.acl.child("vms", false); vms != nil {
		delete(vms.children, fmt.Sprint(vmid))
	}
	for _, p := range s.pools {
		delete(p.vms, vmid)
	}
}
