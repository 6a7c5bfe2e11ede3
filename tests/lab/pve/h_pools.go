package pve

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Pools follow pve-manager PVE/API2/Pool.pm.

func (s *Server) hPoolList(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id := r.p["poolid"]; id != "" {
		p, ok := s.pools[id]
		if !ok {
			return nil, fail("pool '%s' does not exist\n", id)
		}
		return []map[string]any{s.poolInfoLocked(p, r.p["type"])}, nil
	}
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.pools)) {
		// pools the caller may audit (a listing by poolid checks
		// Pool.Audit but ignores the answer: Pool.pm index)
		if !s.hasLocked(r.user, "/pool/"+id, "Pool.Audit") {
			continue
		}
		e := map[string]any{"poolid": id}
		if c := s.pools[id].comment; c != "" {
			e["comment"] = c
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *Server) hPoolGet(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pools[r.p["poolid"]]
	if !ok {
		return nil, fail("pool '%s' does not exist\n", r.p["poolid"])
	}
	info := s.poolInfoLocked(p, r.p["type"])
	delete(info, "poolid")
	return info, nil
}

func (s *Server) poolInfoLocked(p *pool, typ string) map[string]any {
	members := []map[string]any{}
	if typ == "" || typ == "qemu" {
		for _, id := range s.vmIDsLocked() {
			if p.vms[id] {
				members = append(members, s.vmResourceLocked(s.vms[id]))
			}
		}
	}
	if typ == "" || typ == "storage" {
		for _, st := range slices.Sorted(maps.Keys(p.storage)) {
			members = append(members, map[string]any{"id": "storage/" + s.nodes[0].spec.Name + "/" + st, "type": "storage", "storage": st, "node": s.nodes[0].spec.Name})
		}
	}
	info := map[string]any{"poolid": p.id, "members": members}
	if p.comment != "" {
		info["comment"] = p.comment
	}
	return info
}

var poolLeafRE = regexp.MustCompile(`^[A-Za-z]`)

func (s *Server) hPoolCreate(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.p["poolid"]
	if _, ok := s.pools[id]; ok {
		return nil, fail("create pool failed: pool '%s' already exists\n", id)
	}
	leaf := id
	if i := strings.LastIndex(id, "/"); i >= 0 {
		parent := id[:i]
		if _, ok := s.pools[parent]; !ok {
			return nil, fail("create pool failed: parent '%s' of pool '%s' does not exist\n", parent, id)
		}
		leaf = id[i+1:]
	}
	if !poolLeafRE.MatchString(leaf) {
		return nil, fail("create pool failed: pool name must start with a letter\n")
	}
	s.pools[id] = &pool{id: id, comment: r.p["comment"], vms: map[int]bool{}, storage: map[string]bool{}}
	return nil, nil
}

func (s *Server) hPoolUpdate(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.p["poolid"]
	p, ok := s.pools[id]
	if !ok {
		return nil, fail("update pools failed: pool '%s' does not exist\n", id)
	}
	del := r.p["delete"] == "1"
	// Validate everything before changing anything (the real code works on
	// a copy of user.cfg and writes it only at the end).
	vmids := []int{}
	// a permission error inside lock_user_config becomes part of its
	// "update pools failed: ..." die: a 500, not a 403
	permFail := func(err error) error { return fail("update pools failed: %s", errorText(err)) }
	for _, v := range splitList(r.p["vms"]) {
		vmid, _ := strconv.Atoi(v)
		// changing a pool's members changes who may do what with them
		if err := s.checkPermModifyLocked(r.user, "/vms/"+v); err != nil {
			return nil, permFail(err)
		}
		switch {
		case del && !p.vms[vmid]:
			return nil, fail("update pools failed: VM %d is not a pool member\n", vmid)
		case !del && p.vms[vmid]:
			return nil, fail("update pools failed: VM %d is already a pool member\n", vmid)
		case !del:
			if other := s.poolOfLocked(vmid); other != "" {
				if r.p["allow-move"] != "1" {
					return nil, fail("update pools failed: VM %d belongs already to pool '%s' and 'allow-move' is not set\n", vmid, other)
				}
				if err := s.checkLocked(r.user, "/pool/"+other, "Pool.Allocate"); err != nil {
					return nil, permFail(err)
				}
			}
		}
		vmids = append(vmids, vmid)
	}
	for _, st := range splitList(r.p["storage"]) {
		if err := s.checkPermModifyLocked(r.user, "/storage/"+st); err != nil {
			return nil, permFail(err)
		}
		if del && !p.storage[st] {
			return nil, fail("update pools failed: Storage '%s' is not a pool member\n", st)
		}
		if !del && p.storage[st] {
			return nil, fail("update pools failed: Storage '%s' is already a pool member\n", st)
		}
	}
	if c, ok := r.p["comment"]; ok {
		p.comment = c
	}
	for _, vmid := range vmids {
		if del {
			delete(p.vms, vmid)
			continue
		}
		for _, other := range s.pools {
			delete(other.vms, vmid)
		}
		p.vms[vmid] = true
	}
	for _, st := range splitList(r.p["storage"]) {
		if del {
			delete(p.storage, st)
		} else {
			p.storage[st] = true
		}
	}
	return nil, nil
}

func (s *Server) hPoolDelete(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.p["poolid"]
	p, ok := s.pools[id]
	if !ok {
		return nil, fail("delete pool failed: pool '%s' does not exist\n", id)
	}
	for other := range s.pools {
		if strings.HasPrefix(other, id+"/") {
			return nil, fail("delete pool failed: pool '%s' is not empty (contains pool '%s')\n", id, other)
		}
	}
	for _, vmid := range s.vmIDsLocked() {
		if p.vms[vmid] {
			return nil, fail("delete pool failed: pool '%s' is not empty (contains VM %d)\n", id, vmid)
		}
	}
	for _, st := range slices.Sorted(maps.Keys(p.storage)) {
		return nil, fail("delete pool failed: pool '%s' is not empty (contains storage '%s')\n", id, st)
	}
	delete(s.pools, id)
	return nil, nil
}

// poolMustExist is RPCEnvironment::check_pool_exist (a permission error).
func (s *Server) poolMustExistLocked(id string) error {
	if _, ok := s.pools[id]; !ok {
		return &apiError{code: http.StatusForbidden, msg: "Permission check failed (pool '" + id + "' does not exist)\n"}
	}
	return nil
}
