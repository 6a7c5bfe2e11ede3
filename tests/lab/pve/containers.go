package pve

import (
	"fmt"
	"sort"
	"strconv"
)

// container is an LXC container. The lab serves no /nodes/{node}/lxc API;
// containers exist so that VMIDs they hold are taken for VMs too, as on a
// real cluster, where one VMID list covers both (pve-cluster PVE/Cluster.pm
// check_vmid_unused: "CT <vmid> already exists on node '<node>'").
type container struct {
	node, name string
}

// resource is the container's /cluster/resources entry (pve-api schema
// /cluster/resources GET returns: type "lxc", id "lxc/<vmid>").
func (c container) resource(vmid int) map[string]any {
	return map[string]any{
		"id": "lxc/" + strconv.Itoa(vmid), "type": "lxc", "vmid": vmid, "node": c.node, "name": c.name,
		"status": "stopped", "template": 0, "maxmem": 512 << 20, "mem": 0, "maxcpu": 1, "maxdisk": 8 << 30,
	}
}

// idUsedLocked reports whether a VM or a container holds vmid.
func (s *Server) idUsedLocked(vmid int) bool {
	_, vm := s.vms[vmid]
	_, ct := s.cts[vmid]
	return vm || ct
}

// AddContainer makes an LXC container out of band, as `pct create` would.
func (s *Server) AddContainer(node string, vmid int, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.node(node) == nil {
		return fmt.Errorf("lab: no node %q", node)
	}
	if s.idUsedLocked(vmid) {
		return fmt.Errorf("lab: VMID %d is already used", vmid)
	}
	s.cts[vmid] = container{node: node, name: name}
	return nil
}

func (s *Server) containerIDsLocked() []int {
	ids := make([]int, 0, len(s.cts))
	for id := range s.cts {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}
