// Package lab starts a whole lab: the Proxmox VE API (package pve) and,
// through Options.Booter, the guest operating systems its VMs run. Each lab
// owns a 127.X.Y.0/24 address block for its VMs' cloud-init addresses, so
// labs running in parallel (even in different processes) never collide.
package lab

import (
	"context"
	"fmt"
	"net/netip"
	"os"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/addrblock"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/factory"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// Options configure a lab.
type Options struct {
	// Listen address of the Proxmox API; loopback only. Default 127.0.0.1:0.
	Listen string
	// Nodes of the cluster; default pve1..pve3 (see pve.DefaultNode).
	Nodes []pve.NodeSpec
	// TimeScale: 0 as fast as possible (tests), 1 realistic durations.
	TimeScale float64
	// Seed makes MACs, UUIDs, faults and the address block repeatable; 0 is
	// random.
	Seed int64
	// Faults injected from the start (see pve.Faults; change with SetFaults).
	Faults pve.Faults
	// Booter runs the guest OS of started VMs; nil boots simulated Talos
	// nodes (package talos, see TalosBooter) unless NoTalos is set.
	Booter  pve.GuestBooter
	NoTalos bool
	// TokenSecret of the API token; default random.
	TokenSecret string
	// Logf receives log lines; nil discards them.
	Logf func(format string, args ...any)
}

// Lab is a running lab.
type Lab struct {
	PVE     *pve.Server
	block   netip.Prefix
	lock    *os.File
	talos   *talos.Sim
	factory *factory.Server
	scale   float64
}

// Start starts a lab. Close it when done.
func Start(ctx context.Context, opts Options) (*Lab, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	block, lock, err := addrblock.Claim(opts.Seed)
	if err != nil {
		return nil, err
	}
	// The Image Factory registers schematics into the simulator's catalog,
	// answers Proxmox's downloads of factory URLs and the simulator's pulls
	// of factory installer images.
	catalog := talos.NewCatalog()
	fac, err := factory.Start(factory.Options{Logf: opts.Logf, Catalog: catalog})
	if err != nil {
		lock.Close()
		return nil, err
	}
	var sim *talos.Sim
	if opts.Booter == nil && !opts.NoTalos {
		// Its clusters run the real kube-apiserver and etcd (make kube-tools).
		if _, err := talos.FindKubeTools(); err != nil {
			lock.Close()
			fac.Close()
			return nil, err
		}
		sim = newTalosSim(opts, catalog, fac.PullInstaller)
		opts.Booter = TalosBooter(sim)
	}
	srv, err := pve.Start(pve.Options{
		Listen: opts.Listen, Nodes: opts.Nodes, TimeScale: opts.TimeScale, Seed: opts.Seed,
		Faults: opts.Faults, Booter: opts.Booter, TokenSecret: opts.TokenSecret, Logf: opts.Logf,
		Fetch: fac.Fetch,
	})
	if err != nil {
		lock.Close()
		fac.Close()
		if sim != nil {
			sim.Close()
		}
		return nil, err
	}
	return &Lab{PVE: srv, block: block, lock: lock, talos: sim, factory: fac, scale: opts.TimeScale}, nil
}

// Close stops the lab and releases its address block.
func (l *Lab) Close() error {
	err := l.PVE.Close()
	l.factory.Close()
	if l.talos != nil {
		l.talos.Close()
	}
	if l.lock != nil {
		// The file stays: removing it could let two labs lock different
		// inodes under the same name.
		l.lock.Close()
	}
	return err
}

// TimeScale is the lab's Options.TimeScale.
func (l *Lab) TimeScale() float64 { return l.scale }

// Talos is the Talos node simulator (nil with a custom Booter or NoTalos).
func (l *Lab) Talos() *talos.Sim { return l.talos }

// Factory is the lab's Image Factory.
func (l *Lab) Factory() *factory.Server { return l.factory }

// FactoryURL is the lab Image Factory's base URL, "http://127.0.0.1:<port>"
// (a factoryUrl input). It also answers for factory.talos.dev downloads.
func (l *Lab) FactoryURL() string { return l.factory.URL() }

// Endpoint is "https://127.0.0.1:<port>" (the provider's endpoint).
func (l *Lab) Endpoint() string { return l.PVE.Endpoint() }

// APIToken is "USER@REALM!TOKENID=SECRET".
func (l *Lab) APIToken() string { return l.PVE.APIToken() }

// CACertPEM is the CA the API's certificate chains to.
func (l *Lab) CACertPEM() []byte { return l.PVE.CACertPEM() }

// Nodes lists the Proxmox node names.
func (l *Lab) Nodes() []string { return l.PVE.NodeNames() }

// Storages lists a node's storage ids.
func (l *Lab) Storages(node string) []string { return l.PVE.Storages(node) }

// AddressBlock is this lab's 127.X.Y.0/24 for VM addresses.
func (l *Lab) AddressBlock() netip.Prefix { return l.block }

// Address is host's address in the lab's block: 127.X.Y.host.
func (l *Lab) Address(host byte) netip.Addr {
	a := l.block.Addr().As4()
	a[3] = host

	return netip.AddrFrom4(a)
}

// AddressPrefix is the block's first three octets, "127.X.Y", as the
// examples' addressPrefix config takes it.
func (l *Lab) AddressPrefix() string {
	a := l.block.Addr().As4()

	return fmt.Sprintf("%d.%d.%d", a[0], a[1], a[2])
}

// VMs lists the cluster's VMs.
func (l *Lab) VMs() []pve.VMInfo { return l.PVE.VMs() }

// VMConfig returns a VM's current and pending config.
func (l *Lab) VMConfig(vmid int) (current, pending map[string]string, ok bool) {
	return l.PVE.VMConfig(vmid)
}

// SetVMConfig changes a config key out of band (drift); "" deletes it.
func (l *Lab) SetVMConfig(vmid int, key, value string) error {
	return l.PVE.SetVMConfig(vmid, key, value)
}

// DeleteVM deletes a VM out of band.
func (l *Lab) DeleteVM(vmid int) error { return l.PVE.DeleteVM(vmid) }

// SetFaults changes the injected faults.
func (l *Lab) SetFaults(f pve.Faults) { l.PVE.SetFaults(f) }
