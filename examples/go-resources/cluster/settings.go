package cluster

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// Settings are the stack configuration this program reads (see README.md).
type Settings struct {
	ClusterName       string
	TalosVersion      string
	KubernetesVersion string // "" lets Talos pick its default
	Hosts             []string
	ISOStorage        string
	DiskStorage       string
	Bridge            string
	Subnet            netip.Prefix
	Gateway           netip.Addr
	DNSServers        []string
	VIP               netip.Addr
	ControlPlanes     []netip.Addr
	Workers           []netip.Addr
}

// Role is what a node does in the cluster.
type Role string

const (
	ControlPlane Role = "controlplane"
	Worker       Role = "worker"
)

// Node is one VM of the cluster.
type Node struct {
	Name    string     // VM name and Talos hostname
	Role    Role       // controlplane or worker
	Host    string     // Proxmox node the VM runs on
	Address netip.Addr // static address from cloud-init
}

// LoadSettings reads the stack configuration of the project's namespace and checks it.
func LoadSettings(ctx *pulumi.Context) (*Settings, error) {
	c := config.New(ctx, "")
	s := &Settings{
		ClusterName:       orDefault(c.Get("clusterName"), "talos"),
		TalosVersion:      orDefault(c.Get("talosVersion"), "v1.14.1"),
		KubernetesVersion: c.Get("kubernetesVersion"),
		ISOStorage:        orDefault(c.Get("isoStorage"), "local"),
		DiskStorage:       orDefault(c.Get("diskStorage"), "local-lvm"),
		Bridge:            orDefault(c.Get("bridge"), "vmbr0"),
	}
	var cps, workers []string
	if err := c.TryObject("hosts", &s.Hosts); err != nil {
		return nil, fmt.Errorf("config hosts: %w (set it to the Proxmox node names, e.g. pulumi config set --path 'hosts[0]' pve1)", err)
	}
	if err := c.TryObject("controlPlaneAddresses", &cps); err != nil {
		return nil, fmt.Errorf("config controlPlaneAddresses: %w (one address per control plane, e.g. pulumi config set --path 'controlPlaneAddresses[0]' 192.168.1.21)", err)
	}
	if err := c.GetObject("workerAddresses", &workers); err != nil {
		return nil, fmt.Errorf("config workerAddresses: %w (a list of addresses)", err)
	}
	if err := c.GetObject("dnsServers", &s.DNSServers); err != nil {
		return nil, fmt.Errorf("config dnsServers: %w (a list of addresses)", err)
	}
	if len(s.DNSServers) == 0 {
		s.DNSServers = []string{"1.1.1.1", "8.8.8.8"}
	}

	var err error
	if s.Subnet, err = netip.ParsePrefix(c.Require("subnet")); err != nil {
		return nil, fmt.Errorf("config subnet: %w (a CIDR such as 192.168.1.0/24)", err)
	}
	s.Subnet = s.Subnet.Masked()
	if s.Gateway, err = s.inSubnet("gateway", c.Require("gateway")); err != nil {
		return nil, err
	}
	if s.VIP, err = s.inSubnet("vip", c.Require("vip")); err != nil {
		return nil, err
	}
	for i, a := range cps {
		addr, err := s.inSubnet(fmt.Sprintf("controlPlaneAddresses[%d]", i), a)
		if err != nil {
			return nil, err
		}
		s.ControlPlanes = append(s.ControlPlanes, addr)
	}
	for i, a := range workers {
		addr, err := s.inSubnet(fmt.Sprintf("workerAddresses[%d]", i), a)
		if err != nil {
			return nil, err
		}
		s.Workers = append(s.Workers, addr)
	}
	return s, s.check()
}

func (s *Settings) check() error {
	if len(s.Hosts) == 0 {
		return fmt.Errorf("config hosts is empty: list the Proxmox nodes to place VMs on")
	}
	// etcd needs a majority: an even count adds a member without adding fault tolerance.
	if n := len(s.ControlPlanes); n%2 == 0 {
		return fmt.Errorf("config controlPlaneAddresses lists %d control planes: use an odd number (1, 3 or 5) so etcd keeps quorum", n)
	}
	seen := map[netip.Addr]string{s.VIP: "vip", s.Gateway: "gateway"}
	if s.VIP == s.Gateway {
		return fmt.Errorf("config vip %s is the gateway's address: pick a free address for the VIP", s.VIP)
	}
	for _, n := range s.Nodes() {
		if other, dup := seen[n.Address]; dup {
			return fmt.Errorf("node %s: address %s is also used by %s: every node needs its own address, distinct from the VIP and the gateway", n.Name, n.Address, other)
		}
		seen[n.Address] = n.Name
	}
	return nil
}

func (s *Settings) inSubnet(key, value string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(value))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("config %s: %w (an IPv4 address without prefix)", key, err)
	}
	if !s.Subnet.Contains(a) {
		return netip.Addr{}, fmt.Errorf("config %s: %s is outside the subnet %s", key, a, s.Subnet)
	}
	return a, nil
}

// Nodes lists the control planes, then the workers, spread over the hosts in turn.
func (s *Settings) Nodes() []Node {
	var nodes []Node
	for i, a := range s.ControlPlanes {
		nodes = append(nodes, Node{Name: fmt.Sprintf("%s-cp-%d", s.ClusterName, i+1), Role: ControlPlane, Address: a})
	}
	for i, a := range s.Workers {
		nodes = append(nodes, Node{Name: fmt.Sprintf("%s-worker-%d", s.ClusterName, i+1), Role: Worker, Address: a})
	}
	for i := range nodes {
		nodes[i].Host = s.Hosts[i%len(s.Hosts)]
	}
	return nodes
}

// ClusterEndpoint is the Kubernetes API URL every node and the kubeconfig use: the VIP.
func (s *Settings) ClusterEndpoint() string {
	return "https://" + netip.AddrPortFrom(s.VIP, 6443).String()
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
