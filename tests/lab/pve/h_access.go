package pve

// hPermissions is GET /access/permissions (pve-access-control
// src/PVE/API2/AccessControl.pm permissions): the caller's own privileges,
// or those of the user or token in "userid" (a caller may ask for its own
// tokens; anyone else needs Sys.Audit on /access), on every path that
// matters (get_effective_permissions) or on "path" alone. Each privilege
// maps to its propagate flag, 1 or 0.
func (s *Server) hPermissions(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.user
	if v, ok := r.p["userid"]; ok {
		id = v
	}
	owner, _, _ := splitTokenID(id)
	if id != r.user && (owner == "" || owner != r.user) {
		if err := s.checkLocked(r.user, "/access", "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	flags := func(perms map[string]bool) map[string]int {
		out := map[string]int{}
		for p, propagate := range perms {
			out[p] = boolInt(propagate)
		}
		return out
	}
	if path, ok := r.p["path"]; ok && path != "" {
		// permissions() gets the path as given, not normalized
		perms := s.permsLocked(id, path)
		return map[string]any{path: flags(perms)}, nil
	}
	out := map[string]any{}
	for p, perms := range s.effectivePermsLocked(id) {
		out[p] = flags(perms)
	}
	return out, nil
}
