package plan

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// buildCluster fills the cluster-wide config inputs that depend on the
// allocated addresses: the endpoint and the certificate SANs.
func (b *builder) buildCluster() {
	c := &b.plan.Cluster
	c.Name = b.spec.Name
	c.AllowSchedulingOnControlPlanes = b.spec.AllowSchedulingOnControlPlanes
	c.Patches = patchList("patches", b.spec.Patches)

	if c.Endpoint == "" {
		host := b.firstControlPlane().address
		if b.vip.IsValid() {
			host = b.vip.String()
		} else if b.countRole(RoleControlPlane) > 1 {
			b.warn("no vip or endpoint is set: the Kubernetes API endpoint is %s's own address, so clients lose the API when that node is down; set vip", b.firstControlPlane().name)
		}
		c.Endpoint = apiURL(host)
		b.endpointHost = host
	}
	c.CertSANs = []string{}
	add := func(s string) {
		if s != "" && !slices.Contains(c.CertSANs, s) {
			c.CertSANs = append(c.CertSANs, s)
		}
	}
	if b.vip.IsValid() {
		add(b.vip.String())
	}
	add(b.endpointHost)
	for _, s := range b.spec.ExtraSANs {
		add(s)
	}
}

func apiURL(host string) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(kubernetesAPIPort))
}

func (b *builder) firstControlPlane() *slot {
	for _, s := range b.slots {
		if s.role == RoleControlPlane {
			return s
		}
	}
	return nil
}

func (b *builder) countRole(r Role) int {
	n := 0
	for _, s := range b.slots {
		if s.role == r {
			n++
		}
	}
	return n
}

// buildNodes turns each placed, addressed slot into a Node.
func (b *builder) buildNodes() {
	hosts := map[string]Host{}
	for _, h := range b.spec.Hosts {
		hosts[h.Node] = h
	}
	macs := map[string]string{}
	for _, s := range b.slots {
		n := Node{
			Name: s.name, Role: s.role, Pool: s.pool, Ordinal: s.ordinal, Existing: s.prev != nil,
			Unfinished: s.prev != nil && s.prev.Unfinished,
			Power:      b.power(s),
			VM:         b.buildVM(s, hosts[s.host]),
			Config:     b.buildConfig(s),
		}
		for i, nic := range n.VM.NICs {
			if other, dup := macs[nic.MAC]; dup {
				b.probs.add(s.field, "MAC %s of node %s NIC %d is also %s: set nodes[].mac explicitly", nic.MAC, s.name, i, other)
			}
			macs[nic.MAC] = fmt.Sprintf("node %s NIC %d", s.name, i)
		}
		b.checkShrink(s, &n.VM)
		if n.Role == RoleControlPlane && b.vip.IsValid() {
			n.Config.VIP = &VIPConfig{Address: b.vip.String(), LinkMAC: n.VM.NICs[0].MAC}
		}
		b.plan.Nodes = append(b.plan.Nodes, n)
	}
}

func (b *builder) buildVM(s *slot, h Host) VM {
	net := &b.spec.Network
	vm := VM{
		Host:         s.host,
		VMID:         s.explicit.VMID,
		VMIDPinned:   s.explicit.VMID != 0,
		Name:         s.name,
		Cores:        s.size.Cores,
		Sockets:      s.size.Sockets,
		CPUType:      b.cpuType,
		MemoryMiB:    s.size.MemoryMiB,
		DNSServers:   slices.Clone(net.DNSServers),
		SearchDomain: net.SearchDomain,
		Agent:        slices.Contains(b.plan.Cluster.Image.Extensions, GuestAgentExtension),
		OnBoot:       boolOr(b.spec.VM.OnBoot, true),
		Tags:         b.tags(s),
		DataDisks:    []Disk{},
	}
	if vm.VMID == 0 && s.prev != nil {
		vm.VMID = s.prev.VMID
	}
	if vm.DNSServers == nil {
		vm.DNSServers = []string{}
	}
	storage := orDefault(h.DiskStorage, DefaultDiskStorage)
	vm.OSDisk = Disk{Interface: b.diskBus + "0", Storage: storage, SizeGiB: s.size.DiskGiB, Device: deviceName(b.diskBus, 0)}
	for i, d := range s.dataDisks {
		vm.DataDisks = append(vm.DataDisks, Disk{
			Interface: b.diskBus + strconv.Itoa(i+1),
			Storage:   orDefault(d.Storage, storage),
			SizeGiB:   d.SizeGiB,
			Device:    deviceName(b.diskBus, i+1),
			Volume:    d.Volume,
		})
	}

	mac := s.explicit.MAC
	if mac != "" {
		mac, _ = unicastMAC(mac)
	} else if s.prev != nil && s.prev.MAC != "" {
		mac = s.prev.MAC
	} else {
		mac = derivedMAC(b.spec.Name, s.name, 0)
	}
	vm.NICs = []NICConfig{{
		Bridge:  orDefault(net.Bridge, DefaultBridge),
		VLAN:    net.VLAN,
		MTU:     net.MTU,
		MAC:     mac,
		Address: withPrefix(s.address, b.primary),
		Gateway: net.Gateway,
	}}
	if sec := net.Secondary; sec != nil {
		vm.NICs = append(vm.NICs, NICConfig{
			Bridge:  sec.Bridge,
			VLAN:    sec.VLAN,
			MTU:     sec.MTU,
			MAC:     derivedMAC(b.spec.Name, s.name, 1),
			Address: withPrefix(s.secondary, b.secondary),
			Gateway: sec.Gateway,
		})
	}

	if t := b.spec.Image.Template; t != nil {
		vm.Boot = Boot{
			CloneVMID: t.VMID,
			CloneNode: orDefault(t.Node, s.host),
			FullClone: boolOr(t.FullClone, true),
		}
		if h.TemplateVMID != 0 {
			vm.Boot.CloneVMID = h.TemplateVMID
		}
	} else {
		vm.Boot.ISOStorage, vm.Boot.ISOFile = b.bootISO(s, h)
	}
	return vm
}

func (b *builder) isoStorage(h Host) string {
	return orDefault(h.ISOStorage, orDefault(b.spec.Image.ISOStorage, DefaultISOStorage))
}

// tags are the identity tags the component finds its VMs by (Rebuild reads
// them back), then the user's tags. No versions: a VM's tags would change
// before its node is upgraded, so they would say what the node is planned
// to run, not what it runs (the component asks the nodes), and every
// upgrade would show each VM changing.
func (b *builder) tags(s *slot) []string {
	t := []string{TagManaged, TagClusterPrefix + b.spec.Name, string(s.role)}
	if s.role == RoleWorker {
		t = append(t, TagPoolPrefix+s.pool)
	}
	if b.spec.StackTag != "" {
		t = append(t, b.spec.StackTag)
	}
	for _, u := range b.spec.VM.Tags {
		if !slices.Contains(t, u) {
			t = append(t, u)
		}
	}
	return t
}

// derivedMAC is a stable, locally administered unicast MAC for a node's
// NIC, so the MAC (and the VIP's link selector) is known before the VM
// exists and never changes.
func derivedMAC(cluster, node string, nic int) string {
	sum := sha256.Sum256([]byte(cluster + "/" + node + "/" + strconv.Itoa(nic)))
	hw := net.HardwareAddr(sum[:6])
	hw[0] = hw[0]&0xfc | 0x02 // locally administered, unicast
	mac, _ := unicastMAC(hw.String())
	return mac
}

func withPrefix(addr string, sp *addrSpace) string {
	if addr == "" || sp == nil {
		return ""
	}
	return netip.PrefixFrom(netip.MustParseAddr(addr), sp.subnet.Bits()).String()
}

func addressOnly(cidr string) string {
	if p, err := netip.ParsePrefix(cidr); err == nil {
		return p.Addr().String()
	}
	return cidr
}

// buildConfig computes one node's machine configuration inputs.
func (b *builder) buildConfig(s *slot) NodeConfig {
	c := NodeConfig{
		Hostname:         s.name,
		Role:             s.role,
		InstallDisk:      b.installDisk,
		KubeletExtraArgs: map[string]string{},
		NodeLabels:       map[string]string{},
		NodeTaints:       map[string]string{},
		Volumes:          []Volume{},
	}
	if b.ccm {
		// siderolabs/talos-cloud-controller-manager docs/install.md: every
		// kubelet runs with an external cloud provider and rotates its
		// serving certificate; control planes let the CCM read Talos' API.
		c.KubeletExtraArgs["cloud-provider"] = "external"
		c.KubeletExtraArgs["rotate-server-certificates"] = "true"
		if s.role == RoleControlPlane {
			c.TalosAPIAccess = &TalosAPIAccess{
				AllowedRoles:                []string{"os:reader"},
				AllowedKubernetesNamespaces: []string{"kube-system"},
			}
		}
	}

	var roleLabels map[string]string
	var roleTaints []Taint
	var rolePatches []Patch
	if s.role == RoleControlPlane {
		cp := &b.spec.ControlPlane
		roleLabels, roleTaints = cp.Labels, cp.Taints
		rolePatches = patchList("controlPlane.patches", cp.Patches)
	} else {
		wp := &b.spec.WorkerPools[s.poolIndex]
		roleLabels, roleTaints = wp.Labels, wp.Taints
		rolePatches = append(patchList("workerPatches", b.spec.WorkerPatches),
			patchList(idx("workerPools", s.poolIndex)+".patches", wp.Patches)...)
	}
	maps.Copy(c.NodeLabels, roleLabels)
	maps.Copy(c.NodeLabels, s.explicit.Labels)
	maps.Copy(c.NodeTaints, talosTaints(roleTaints))
	maps.Copy(c.NodeTaints, talosTaints(s.explicit.Taints))

	for i, d := range s.dataDisks {
		if d.Volume != "" {
			c.Volumes = append(c.Volumes, Volume{Name: d.Volume, Device: deviceName(b.diskBus, i+1)})
		}
	}

	c.Patches = rolePatches
	c.Patches = append(c.Patches, patchList(s.field+".patches", s.explicit.Patches)...)
	c.Patches = append(c.Patches, patchList("nodePatches[\""+s.name+"\"]", b.spec.NodePatches[s.name])...)
	return c
}

func patchList(field string, patches []string) []Patch {
	out := []Patch{}
	for i, p := range patches {
		out = append(out, Patch{Source: idx(field, i), Content: p})
	}
	return out
}

// buildOrders picks the bootstrap node and computes the rollout order, the
// removals and the ISO downloads.
func (b *builder) buildOrders() {
	p := &b.plan
	first := b.firstControlPlane()
	p.Bootstrap = first.name
	if b.prev != nil && b.prev.Bootstrap != "" {
		for _, s := range b.slots {
			if s.name == b.prev.Bootstrap && s.role == RoleControlPlane {
				p.Bootstrap = s.name
				first = s
			}
		}
	}
	p.Endpoints = Endpoints{
		Kubernetes:          p.Cluster.Endpoint,
		Bootstrap:           first.address,
		BootstrapKubernetes: apiURL(first.address),
		Talos:               []string{},
	}
	p.Rollout = []string{}
	for _, role := range []Role{RoleControlPlane, RoleWorker} {
		for _, s := range b.slots {
			if s.role == role {
				p.Rollout = append(p.Rollout, s.name)
				if role == RoleControlPlane {
					p.Endpoints.Talos = append(p.Endpoints.Talos, s.address)
				}
			}
		}
	}

	p.Removed = []NodeState{}
	if b.prev != nil {
		for _, pn := range b.prev.Nodes {
			if !slices.ContainsFunc(b.slots, func(s *slot) bool { return s.name == pn.Name }) {
				p.Removed = append(p.Removed, pn)
			}
		}
		// Workers leave first; control planes leave one at a time, highest
		// ordinal first, so etcd shrinks member by member and keeps quorum.
		slices.SortStableFunc(p.Removed, func(a, c NodeState) int {
			if a.Role != c.Role {
				if a.Role == RoleWorker {
					return -1
				}
				return 1
			}
			if a.Pool != c.Pool {
				return cmpString(a.Pool, c.Pool)
			}
			return c.Ordinal - a.Ordinal
		})
	}

	b.buildISOs()
}

func cmpString(a, c string) int {
	switch {
	case a < c:
		return -1
	case a > c:
		return 1
	}
	return 0
}

// checkShrink refuses smaller disks for existing nodes: Proxmox cannot
// shrink a disk, and replacing the VM would lose its data.
func (b *builder) checkShrink(s *slot, vm *VM) {
	if s.prev == nil {
		return
	}
	if s.prev.DiskGiB > vm.OSDisk.SizeGiB {
		b.probs.add(s.field, "node %s has a %d GiB OS disk: disks cannot shrink (to %d GiB); keep diskSize at %d or more", s.name, s.prev.DiskGiB, vm.OSDisk.SizeGiB, s.prev.DiskGiB)
	}
	for _, key := range s.prev.DataDisks {
		iface, size, ok := parseDataDiskKey(key)
		if !ok {
			continue
		}
		for _, d := range vm.DataDisks {
			if d.Interface == iface && d.SizeGiB < size {
				b.probs.add(s.field, "node %s has a %d GiB data disk %s: disks cannot shrink (to %d GiB)", s.name, size, iface, d.SizeGiB)
			}
		}
	}
}

func parseDataDiskKey(key string) (iface string, size int, ok bool) {
	parts := strings.SplitN(key, ":", 3)
	if len(parts) < 2 {
		return "", 0, false
	}
	size, err := strconv.Atoi(parts[1])
	return parts[0], size, err == nil
}
