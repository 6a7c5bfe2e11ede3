package pve

import (
	"fmt"
	"regexp"
	"strings"
)

// The lab's user administration, as pveum (root@pam on the node) does it
// through pve-access-control src/PVE/API2/{User,Group,Role,ACL}.pm, with
// their error texts. Pveum takes the same commands as text.

// AddUser is `pveum user add <userid> [--groups ...]`: an enabled user.
func (s *Server) AddUser(userid string, groups ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !userIDRE.MatchString(userid) {
		return fmt.Errorf("value '%s' does not look like a valid user name", userid)
	}
	if s.access.users[userid] != nil {
		return fmt.Errorf("create user failed: user '%s' already exists", userid)
	}
	u := &accessUser{enabled: true, groups: map[string]bool{}, tokens: map[string]*apiToken{}}
	for _, g := range groups {
		if !s.access.groups[g] {
			return fmt.Errorf("create user failed: no such group '%s'", g)
		}
		u.groups[g] = true
	}
	s.access.users[userid] = u
	return nil
}

// SetUserEnabled is `pveum user modify <userid> --enable 0|1`.
func (s *Server) SetUserEnabled(userid string, enabled bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.access.users[userid]
	if u == nil {
		return fmt.Errorf("update user failed: no such user ('%s')", userid)
	}
	u.enabled = enabled
	return nil
}

// AddGroup is `pveum group add <group>`.
func (s *Server) AddGroup(group string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !groupIDRE.MatchString(group) {
		return fmt.Errorf("group name '%s' contains invalid characters", group)
	}
	if s.access.groups[group] {
		return fmt.Errorf("create group failed: group '%s' already exists", group)
	}
	s.access.groups[group] = true
	return nil
}

// AddRole is `pveum role add <role> --privs <privs>`: a custom role. Role
// names starting with PVE are reserved (API2/Role.pm create_role).
func (s *Server) AddRole(role string, privs ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !roleIDRE.MatchString(role) {
		return fmt.Errorf("role name '%s' contains invalid characters", role)
	}
	if strings.HasPrefix(strings.ToUpper(role), "PVE") {
		return fmt.Errorf("cannot use role ID starting with the (case-insensitive) 'PVE' namespace")
	}
	if _, ok := s.access.role(role); ok {
		return fmt.Errorf("create role failed: role '%s' already exists", role)
	}
	set := map[string]bool{}
	for _, p := range splitPrivs(privs) {
		if !validPrivs[p] {
			return fmt.Errorf("create role failed: invalid privilege '%s'", p)
		}
		set[p] = true
	}
	s.access.roles[role] = set
	return nil
}

// splitPrivs is PVE::Tools::split_list over every argument.
func splitPrivs(privs []string) []string {
	var out []string
	for _, p := range privs {
		out = append(out, strings.FieldsFunc(p, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == 0 })...)
	}
	return out
}

// ACL is one `pveum acl modify|delete <path> --roles ... --users|--groups|--tokens ...`.
type ACL struct {
	Path                  string
	Roles                 []string
	Users, Groups, Tokens []string
	// NoPropagate is --propagate 0: the roles hold on Path only, not below.
	NoPropagate bool
}

// SetACL is `pveum acl modify` (API2/ACL.pm update_acl).
func (s *Server) SetACL(a ACL) error { return s.updateACL(a, false) }

// DeleteACL is `pveum acl delete`.
func (s *Server) DeleteACL(a ACL) error { return s.updateACL(a, true) }

func (s *Server) updateACL(a ACL, del bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(a.Users)+len(a.Groups)+len(a.Tokens) == 0 {
		return fmt.Errorf("either 'users', 'groups' or 'tokens' is required")
	}
	path := normalizeACLPath(a.Path)
	if path == "" || (!del && !validACLPath.MatchString(path)) {
		return fmt.Errorf("invalid ACL path '%s'", a.Path)
	}
	for _, r := range a.Roles {
		if _, ok := s.access.role(r); !ok {
			return fmt.Errorf("ACL update failed: role '%s' does not exist", r)
		}
	}
	for _, g := range a.Groups {
		if !s.access.groups[g] {
			return fmt.Errorf("ACL update failed: group '%s' does not exist", g)
		}
	}
	for _, u := range a.Users {
		if s.access.users[u] == nil {
			return fmt.Errorf("ACL update failed: user '%s' does not exist", u)
		}
	}
	for _, t := range a.Tokens {
		user, name, ok := splitTokenID(t)
		if !ok {
			return fmt.Errorf("ACL update failed: '%s' is not a valid token ID - not able to split into user and token parts", t)
		}
		if u := s.access.users[user]; u == nil || u.tokens[name] == nil {
			return fmt.Errorf("ACL update failed: no such token '%s' for user '%s'", name, user)
		}
	}
	n := s.access.acl
	if path != "/" {
		for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
			n = n.child(seg, true)
		}
	}
	set := func(m map[string]map[string]bool, who string) {
		for _, r := range a.Roles {
			if del {
				delete(m[who], r)
				continue
			}
			if m[who] == nil {
				m[who] = map[string]bool{}
			}
			m[who][r] = !a.NoPropagate
		}
		if len(m[who]) == 0 {
			delete(m, who)
		}
	}
	for _, g := range a.Groups {
		set(n.groups, g)
	}
	for _, u := range a.Users {
		set(n.users, u)
	}
	for _, t := range a.Tokens {
		set(n.tokens, t)
	}
	return nil
}

var tokenNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.\-_]+$`)

// AddToken is `pveum user token add <userid> <name> [--privsep 0|1]`
// (API2/User.pm generate_token; privsep defaults to 1 there, callers say
// which they want). It returns the full token, "USER@REALM!NAME=SECRET".
func (s *Server) AddToken(userid, name string, privsep bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addTokenLocked(userid, name, privsep, "")
}

func (s *Server) addTokenLocked(userid, name string, privsep bool, secret string) (string, error) {
	u := s.access.users[userid]
	if u == nil {
		return "", fmt.Errorf("no such user ('%s')", userid)
	}
	if !tokenNameRE.MatchString(name) {
		return "", fmt.Errorf("tokenid: value does not match the regex pattern")
	}
	if u.tokens[name] != nil {
		return "", fmt.Errorf("tokenid: Token already exists.")
	}
	if secret == "" {
		secret = newUUID(s.rng)
	}
	u.tokens[name] = &apiToken{secret: secret, privsep: privsep}
	return userid + "!" + name + "=" + secret, nil
}

// DeleteToken is `pveum user token remove <userid> <name>`: the token and
// its ACL entries go (API2/User.pm remove_token).
func (s *Server) DeleteToken(userid, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.access.users[userid]
	if u == nil || u.tokens[name] == nil {
		return fmt.Errorf("no such token '%s' for user '%s'", name, userid)
	}
	delete(u.tokens, name)
	var drop func(n *aclNode)
	drop = func(n *aclNode) {
		delete(n.tokens, userid+"!"+name)
		for _, c := range n.children {
			drop(c)
		}
	}
	drop(s.access.acl)
	return nil
}

// Permissions answers what GET /access/permissions?userid=id&path=path
// does: the privileges id (a user or a full token id) holds on path, with
// their propagate flags.
func (s *Server) Permissions(id, path string) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.permsLocked(id, normalizeACLPath(path))
}
