package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
)

// StateVersion is bumped when State changes shape.
const StateVersion = 1

// State is the digest of a plan the component keeps between runs (and can
// rebuild from the VMs in Proxmox). It holds no secret: config inputs are
// kept only as fingerprints.
type State struct {
	Version   int         `json:"version"`
	Cluster   string      `json:"cluster"`
	Bootstrap string      `json:"bootstrap,omitempty"`
	Nodes     []NodeState `json:"nodes"`
}

// NodeState is what is remembered about one node.
type NodeState struct {
	Name             string `json:"name"`
	Role             Role   `json:"role"`
	Pool             string `json:"pool"`
	Ordinal          int    `json:"ordinal"`
	Host             string `json:"host"`
	VMID             int    `json:"vmId,omitempty"`
	Address          string `json:"address"`
	SecondaryAddress string `json:"secondaryAddress,omitempty"`
	MAC              string `json:"mac,omitempty"`
	Cores            int    `json:"cores,omitempty"`
	Sockets          int    `json:"sockets,omitempty"`
	CPUType          string `json:"cpuType,omitempty"`
	MemoryMiB        int    `json:"memoryMiB,omitempty"`
	// DiskInterface is the OS disk's interface, e.g. "scsi0".
	DiskInterface string `json:"diskInterface,omitempty"`
	DiskGiB       int    `json:"diskGiB,omitempty"`
	// DiskStorage is the OS disk's storage (the cloud-init drive's too):
	// a change moves the disk live. Empty in states from before it was
	// kept, and then not compared.
	DiskStorage string `json:"diskStorage,omitempty"`
	// DataDisks are "interface:sizeGiB:storage" entries.
	DataDisks []string `json:"dataDisks,omitempty"`
	// Tags are the VM's tags as Proxmox keeps them (TagList), OnBoot
	// whether it starts with its host, Agent whether its guest agent
	// device is on. Unset when not known (a VM whose node is offline),
	// and then not compared.
	Tags   string `json:"tags,omitempty"`
	OnBoot *bool  `json:"onBoot,omitempty"`
	Agent  *bool  `json:"agent,omitempty"`
	// Boot is "iso:<storage>" or "clone:<vmid>@<node>[:linked]".
	Boot string `json:"boot,omitempty"`
	// ISO is the volume in the VM's CD drive ("local:iso/talos-....iso"),
	// kept for the node: its installed system needs no other.
	ISO string `json:"iso,omitempty"`
	// NICs fingerprints the network devices (bridge, VLAN, MTU, MAC).
	NICs string `json:"nics,omitempty"`
	// CloudInit fingerprints what the cloud-init drive carries: addresses,
	// gateways, DNS servers and search domain.
	CloudInit         string `json:"cloudInit,omitempty"`
	TalosVersion      string `json:"talosVersion,omitempty"`
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Image is the start of the Image Factory schematic ID (extensions and
	// kernel args): a change means a Talos upgrade. Where images are
	// downloaded from is not part of it.
	Image string `json:"image,omitempty"`
	// Config fingerprints each machine configuration input by name.
	Config map[string]string `json:"config,omitempty"`
	// Power is what Proxmox reported for a rebuilt node's VM: an
	// observation, not part of what the node is planned to be.
	Power Power `json:"-"`
	// Unfinished: the VM's last create or update failed part-way
	// (ObservedVM.Unfinished); an observation too.
	Unfinished bool `json:"-"`
}

// State returns the digest of the plan.
func (p *Plan) State() *State {
	s := &State{Version: StateVersion, Cluster: p.Cluster.Name, Bootstrap: p.Bootstrap}
	for i := range p.Nodes {
		s.Nodes = append(s.Nodes, p.nodeState(&p.Nodes[i]))
	}
	return s
}

func (p *Plan) nodeState(n *Node) NodeState {
	ns := NodeState{
		Name:              n.Name,
		Role:              n.Role,
		Pool:              n.Pool,
		Ordinal:           n.Ordinal,
		Host:              n.VM.Host,
		VMID:              n.VM.VMID,
		Address:           addressOnly(n.VM.NICs[0].Address),
		MAC:               n.VM.NICs[0].MAC,
		Cores:             n.VM.Cores,
		Sockets:           n.VM.Sockets,
		CPUType:           n.VM.CPUType,
		MemoryMiB:         n.VM.MemoryMiB,
		DiskInterface:     n.VM.OSDisk.Interface,
		DiskGiB:           n.VM.OSDisk.SizeGiB,
		DiskStorage:       n.VM.OSDisk.Storage,
		Boot:              bootKey(n.VM.Boot),
		ISO:               isoVolume(n.VM.Boot),
		NICs:              fingerprint(nicHardware(n.VM.NICs)),
		CloudInit:         fingerprint([]any{nicAddresses(n.VM.NICs), n.VM.DNSServers, n.VM.SearchDomain}),
		TalosVersion:      p.Cluster.TalosVersion,
		KubernetesVersion: p.Cluster.KubernetesVersion,
		Image:             shortID(p.Cluster.Image.SchematicID),
		Config:            p.configFingerprints(n),
		Tags:              TagList(n.VM.Tags),
		OnBoot:            &n.VM.OnBoot,
		Agent:             &n.VM.Agent,
		// Once the plan is applied, every node's VM runs.
		Power: PowerRunning,
	}
	if len(n.VM.NICs) > 1 {
		ns.SecondaryAddress = addressOnly(n.VM.NICs[1].Address)
	}
	for _, d := range n.VM.DataDisks {
		ns.DataDisks = append(ns.DataDisks, dataDiskKey(d))
	}
	return ns
}

// configFingerprints names each machine configuration input of a node with a
// short hash of its value, so Compare can say which inputs changed without
// keeping values (inline manifests and patches may hold secrets).
func (p *Plan) configFingerprints(n *Node) map[string]string {
	c := &p.Cluster
	nc := &n.Config
	f := map[string]string{
		"endpoint":                       fingerprint(c.Endpoint),
		"certSANs":                       fingerprint(c.CertSANs),
		"cni":                            fingerprint(c.CNI),
		"proxyDisabled":                  fingerprint(c.ProxyDisabled),
		"externalCloudProvider":          fingerprint(c.ExternalCloudProvider),
		"extraManifests":                 fingerprint(c.ExtraManifests),
		"inlineManifests":                fingerprint(c.InlineManifests),
		"allowSchedulingOnControlPlanes": fingerprint(c.AllowSchedulingOnControlPlanes),
		"registryMirrors":                fingerprint(c.RegistryMirrors),
		"hostname":                       fingerprint(nc.Hostname),
		"installDisk":                    fingerprint(nc.InstallDisk),
		"kubeletExtraArgs":               fingerprint(nc.KubeletExtraArgs),
		"talosAPIAccess":                 fingerprint(nc.TalosAPIAccess),
		"vip":                            fingerprint(nc.VIP),
		"nodeLabels":                     fingerprint(nc.NodeLabels),
		"nodeTaints":                     fingerprint(nc.NodeTaints),
		"volumes":                        fingerprint(nc.Volumes),
		"patches":                        fingerprint([]any{c.Patches, nc.Patches}),
	}
	return f
}

// fingerprint is a short, stable hash of a value's JSON form (maps marshal
// with sorted keys).
func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only plain data is fingerprinted; this cannot happen.
		panic("plan: fingerprint: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// shortID is the first 12 characters of a schematic ID: enough to tell
// schematics apart, short enough for a Proxmox tag.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func bootKey(b Boot) string {
	if b.CloneVMID == 0 {
		return "iso:" + b.ISOStorage
	}
	k := "clone:" + itoa(b.CloneVMID) + "@" + b.CloneNode
	if !b.FullClone {
		k += ":linked"
	}
	return k
}

func isoVolume(b Boot) string {
	if b.CloneVMID != 0 || b.ISOFile == "" {
		return ""
	}
	return ISOVolumeID(b.ISOStorage, b.ISOFile)
}

func nicHardware(nics []NICConfig) []string {
	out := []string{}
	for _, n := range nics {
		out = append(out, n.Bridge+"/"+itoa(n.VLAN)+"/"+itoa(n.MTU)+"/"+n.MAC)
	}
	return out
}

func nicAddresses(nics []NICConfig) []string {
	out := []string{}
	for _, n := range nics {
		out = append(out, n.Address+"/"+n.Gateway)
	}
	return out
}

// TagList is tags as Proxmox stores them by default, to compare as a set:
// lower-cased (case-insensitive unless the datacenter's tag-style says
// otherwise), sorted, without duplicates, joined by ";" (pve-guest-common
// PVE/GuestHelpers.pm get_unique_tags).
func TagList(tags []string) string {
	var out []string
	for _, t := range tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ";")
}

func dataDiskKey(d Disk) string {
	return d.Interface + ":" + itoa(d.SizeGiB) + ":" + d.Storage
}

// node returns the named node of a state, or nil.
func (s *State) node(name string) *NodeState {
	if s == nil {
		return nil
	}
	i := slices.IndexFunc(s.Nodes, func(n NodeState) bool { return n.Name == name })
	if i < 0 {
		return nil
	}
	return &s.Nodes[i]
}
