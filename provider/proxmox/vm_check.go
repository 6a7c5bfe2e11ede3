package proxmox

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// checkAgainstCluster validates what only the cluster knows: the node, its
// bridges and storages, the clone source, and whether an explicit VMID is
// free. It runs at preview, so that nothing is created for a bad input.
// Inputs unchanged since the last accepted ones (unchangedInputs) are only
// checked for their node's state: an offline node still warns.
func checkAgainstCluster(ctx context.Context, client *pve.Client, name string, a VirtualMachineArgs,
	old *VirtualMachineArgs, u unknowns, unchanged bool) (*validator, error) {
	c := newCheckReads(client)
	v := &validator{u: u}
	if !u.known("node") {
		return v, nil
	}
	node, nodesAt, usable, err := checkNode(ctx, c, v, a, old, !unchanged)
	if err != nil {
		return nil, err
	}
	if !usable {
		return v, nil
	}
	if u.known("memory") && u.known("started") && u.known("template") {
		if w := checkMemory(ctx, client, name, a, old, node, nodesAt); w != "" {
			v.warnings = append(v.warnings, w)
		}
	}
	if unchanged {
		return v, nil
	}

	if err := checkBridges(ctx, c, v, a); err != nil {
		return nil, err
	}
	if err := checkStorages(ctx, c, v, a); err != nil {
		return nil, err
	}
	if err := checkImports(ctx, c, v, a, old); err != nil {
		return nil, err
	}
	if err := checkPool(ctx, c, v, a); err != nil {
		return nil, err
	}
	if err := checkGuestIDs(ctx, client, c, v, name, a, old); err != nil {
		return nil, err
	}
	return v, nil
}

// checkNode finds the VM's node; usable is false when the checks that need
// the node cannot run (not a node of the cluster, offline, or not answering
// (pve.NodeSilent): a failure for a new VM, a warning for an existing one).
// at is when the node list was read (pve.CheckNodes).
func checkNode(ctx context.Context, c *checkReads, v *validator, a VirtualMachineArgs, old *VirtualMachineArgs, probe bool) (node pve.NodeInfo, at time.Time, usable bool, err error) {
	nodes, at, err := c.CheckNodes(ctx, false)
	if err != nil {
		return node, at, false, fmt.Errorf("checking node %q: %w", a.Node, err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
		if n.Name == a.Node {
			node, usable = n, true
		}
	}
	if !usable {
		sort.Strings(names)
		v.fail("node", "node %q is not a node of this Proxmox VE cluster; its nodes are: %s", a.Node, strings.Join(names, ", "))
		return node, at, false, nil
	}
	down, remedy := "node "+a.Node+" is offline", "start it"
	if node.Online {
		// a member that does not answer is as good as offline for the
		// checks. probe: the checks read the bridges anyway (once per
		// process); unchanged inputs read nothing from the node, and only
		// what an earlier read of this run found counts
		var err error
		if probe {
			_, err = c.Bridges(ctx, a.Node)
		} else {
			err = c.Silence(a.Node)
		}
		if _, silent := pve.NodeSilent(err); !silent {
			return node, at, true, nil // any other error: checkBridges says it
		}
		down, remedy = err.Error(), "wait until it answers"
	}
	if old != nil && old.Node == a.Node {
		// an existing VM: a node down must not block every `up` of the
		// program; what needs the node fails when it is used
		v.warnings = append(v.warnings, fmt.Sprintf("%s: this VM's bridges, storages and vmId "+
			"cannot be checked now, and any change to it will fail until the node is back", down))
	} else {
		v.fail("node", "%s: %s, or place the VM on another node", down, remedy)
	}
	return node, at, false, nil
}

// checkGuestIDs checks what needs the list of the cluster's guests: the clone
// source, and a pinned vmId that must be free.
func checkGuestIDs(ctx context.Context, client *pve.Client, c *checkReads, v *validator, name string,
	a VirtualMachineArgs, old *VirtualMachineArgs) error {
	checkClone := a.Clone != nil && v.u.known("clone.vmId")
	checkVMID := a.VMID != nil && v.u.known("vmId") && (old == nil || old.VMID == nil || *old.VMID != *a.VMID)
	if !checkClone && !checkVMID {
		return nil
	}
	// containers too: VMIDs are unique across VMs and containers
	vms, err := c.ClusterGuests(ctx)
	if err != nil {
		return fmt.Errorf("listing the cluster's VMs and containers: %w", err)
	}
	if checkClone && checkCloneSource(v, a, vms) && old == nil {
		if err := checkCloneAcrossNodes(ctx, c, v, a); err != nil {
			return err
		}
		if err := checkCloneDiskSizes(ctx, c, v, a); err != nil {
			return err
		}
	}
	if checkVMID {
		checkVMIDFree(ctx, client, c, v, name, a, old, vms)
	}
	return nil
}

// checkVMIDFree fails a pinned vmId that another guest, or another resource
// of this program, already has.
func checkVMIDFree(ctx context.Context, client *pve.Client, c *checkReads, v *validator, name string,
	a VirtualMachineArgs, old *VirtualMachineArgs, vms []pve.ClusterVM) {
	for _, vm := range vms {
		if vm.VMID != *a.VMID || isOwnVM(vm, old) {
			continue
		}
		if w := interruptedOwnVM(ctx, client, vm, resourceIdentity(ctx).id); w != "" {
			v.warnings = append(v.warnings, w)
			continue
		}
		v.fail("vmId", "vmId %d is already used by %s %q on node %s: choose another vmId, leave it unset to "+
			"allocate one, or import the existing VM", vm.VMID, vm.Kind(), vm.Name, vm.Node)
	}
	if other, ok := c.IDs().Claim(*a.VMID, name); !ok {
		v.fail("vmId", "vmId %d is also given to resource %q of this program: each VM needs its own vmId", *a.VMID, other)
	}
}

// isOwnVM reports whether vm is the one this resource already manages: a
// resource created without vmId whose user now pins the id it was given.
// Check only sees the old inputs, not the state, so the VM is recognised by
// the node and name those inputs gave it; Diff compares the id with the state
// and refuses an id that belongs to another VM (checkNewVMIDFree).
func isOwnVM(vm pve.ClusterVM, old *VirtualMachineArgs) bool {
	if old == nil || old.VMID != nil || vm.Node != old.Node {
		return false
	}
	return old.Name == nil || vm.Name == *old.Name
}

// checkPool: Proxmox refuses a VM in a pool that does not exist ("Permission
// check failed (pool '<id>' does not exist)", PVE RPCEnvironment
// check_pool_exist), after nothing else is wrong, so say it at preview.
func checkPool(ctx context.Context, c *checkReads, v *validator, a VirtualMachineArgs) error {
	if a.Pool == nil || *a.Pool == "" || !v.u.known("pool") {
		return nil
	}
	pools, err := c.Pools(ctx)
	if err != nil {
		return fmt.Errorf("listing the resource pools to check pool %q: %w", *a.Pool, err)
	}
	if slices.Contains(pools, *a.Pool) {
		return nil
	}
	sort.Strings(pools)
	list := strings.Join(pools, ", ")
	if list == "" {
		list = "none"
	}
	v.fail("pool", "pool %q does not exist (or the API token has neither Pool.Audit nor Pool.Allocate on "+
		"/pool/%s); the pools it can use are: %s. Create the pool (pveum pool add %s) or choose one of those",
		*a.Pool, *a.Pool, list, *a.Pool)
	return nil
}

func checkBridges(ctx context.Context, c *checkReads, v *validator, a VirtualMachineArgs) error {
	if len(a.NetworkDevices) == 0 {
		return nil
	}
	bridges, err := c.Bridges(ctx, a.Node)
	if err != nil {
		return fmt.Errorf("listing the bridges of node %s: %w", a.Node, err)
	}
	sort.Strings(bridges)
	for i, n := range a.NetworkDevices {
		path := fmt.Sprintf("networkDevices[%d].bridge", i)
		v.check(path, n.Bridge != "" && !slices.Contains(bridges, n.Bridge),
			"bridge %q does not exist on node %s; its bridges are: %s", n.Bridge, a.Node, strings.Join(bridges, ", "))
	}
	return nil
}

func checkStorages(ctx context.Context, c *checkReads, v *validator, a VirtualMachineArgs) error {
	type use struct{ path, storage, content string }
	var uses []use
	for i, d := range a.Disks {
		uses = append(uses, use{fmt.Sprintf("disks[%d].storage", i), d.Storage, "images"})
	}
	if a.EfiDisk != nil {
		uses = append(uses, use{"efiDisk.storage", a.EfiDisk.Storage, "images"})
	}
	if a.CloudInit != nil {
		uses = append(uses, use{"cloudInit.storage", a.CloudInit.Storage, "images"})
	}
	if a.ISO != nil && *a.ISO != "" {
		s, _, _ := strings.Cut(*a.ISO, ":")
		uses = append(uses, use{"iso", s, "iso"})
	}
	if a.Clone != nil && a.Clone.Storage != nil {
		uses = append(uses, use{"clone.storage", *a.Clone.Storage, "images"})
	}
	if len(uses) == 0 {
		return nil
	}
	for _, x := range uses {
		if x.storage == "" {
			continue
		}
		s, ok, err := c.StorageOn(ctx, a.Node, x.storage)
		if err != nil {
			return fmt.Errorf("listing the storages of node %s: %w", a.Node, err)
		}
		switch {
		case !ok:
			names, err := storageNames(ctx, c, a.Node)
			if err != nil {
				return err
			}
			v.check(x.path, true, "storage %q is not available on node %s; its storages are: %s",
				x.storage, a.Node, strings.Join(names, ", "))
		case !s.Holds(x.content):
			v.check(x.path, true, "storage %q on node %s does not hold content type %q (it holds %s): choose a "+
				"storage configured for %s", x.storage, a.Node, x.content, strings.Join(s.Content, ", "), x.content)
		case x.path == "iso" && v.u.known("iso"):
			// Proxmox refuses the create ("volume '<volid>' does not
			// exist", pve-storage PVE::Storage::path via qemu-server
			// print_drive_commandline) after nothing else is wrong.
			if _, found, err := c.FindVolume(ctx, a.Node, x.storage, *a.ISO); err != nil {
				return fmt.Errorf("reading the content of storage %s on node %s to find %s: %w", x.storage, a.Node, *a.ISO, err)
			} else if !found {
				v.check("iso", true, "volume %q does not exist on node %s: download it first (a DownloadFile's "+
					"volumeId), or name a file the storage lists as <storage>:iso/<file>", *a.ISO, a.Node)
			}
		}
	}
	return nil
}

// storageNames are the names of node's storages, sorted, for a message.
func storageNames(ctx context.Context, c *checkReads, node string) ([]string, error) {
	storages, err := c.Storages(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("listing the storages of node %s: %w", node, err)
	}
	names := make([]string, 0, len(storages))
	for _, s := range storages {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names, nil
}

// checkCloneSource reports whether the source was found where the inputs
// say it is.
func checkCloneSource(v *validator, a VirtualMachineArgs, vms []pve.ClusterVM) bool {
	c := a.Clone
	srcNode := cloneSource(a).Node
	for _, vm := range vms {
		if vm.VMID != c.VMID {
			continue
		}
		if vm.Type == "lxc" {
			v.check("clone.vmId", true, "%d is a container (CT %q on node %s), and a VM can only be cloned from a VM "+
				"or VM template", c.VMID, vm.Name, vm.Node)
			return false
		}
		if vm.Node != srcNode {
			v.check("clone.node", true, "the clone source VM %d is on node %s, not %s: set clone.node: %s",
				c.VMID, vm.Node, srcNode, vm.Node)
		}
		if c.Full != nil && !*c.Full && !vm.Template {
			v.check("clone.full", true, "a linked clone needs a template, and VM %d is not one: convert it to a "+
				"template or set clone.full: true", c.VMID)
		}
		return vm.Node == srcNode
	}
	v.check("clone.vmId", true, "the clone source VM %d does not exist in this cluster", c.VMID)
	return false
}

// checkCloneAcrossNodes: Proxmox clones to another node only when every
// volume of the source (CD-ROMs and the cloud-init drive included) is on
// shared storage, and into shared storage only (qemu-server
// src/PVE/API2/Qemu.pm clone_vm: "can't clone VM to node '<target>' (VM
// uses local storage)", "can't clone to non-shared storage '<storage>'").
func checkCloneAcrossNodes(ctx context.Context, c *checkReads, v *validator, a VirtualMachineArgs) error {
	src := cloneSource(a)
	if src.Node == a.Node || !v.u.known("clone.node") {
		return nil
	}
	cfg, err := c.VMConfig(ctx, src)
	if err != nil {
		return fmt.Errorf("reading the clone source %s: %w", src, err)
	}
	storages, err := c.Storages(ctx, src.Node)
	if err != nil {
		return fmt.Errorf("listing the storages of node %s: %w", src.Node, err)
	}
	shared := map[string]bool{}
	for _, s := range storages {
		shared[s.Name] = s.Shared
	}
	var local []string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if !volumeKeyRE.MatchString(k) {
			continue
		}
		d := parseDisk(cfg[k])
		if d.Volume == "" || d.Volume == "none" || d.Volume == "cdrom" || shared[d.Storage] {
			continue
		}
		local = append(local, fmt.Sprintf("%s on %s", k, d.Storage))
	}
	v.check("clone.node", len(local) > 0, "Proxmox clones VM %d from node %s to node %s only when all its volumes are "+
		"on shared storage; these are not: %s. Keep a copy of the template on node %s, or move its volumes to "+
		"shared storage", src.VMID, src.Node, a.Node, strings.Join(local, ", "), a.Node)
	if st := a.Clone.Storage; st != nil && len(local) == 0 && !shared[*st] {
		v.check("clone.storage", true, "a clone to another node (%s) must go to shared storage, and %q is not shared",
			a.Node, *st)
	}
	return nil
}

// volumeKeyRE matches the config keys whose values are volumes
// (PVE::QemuConfig foreach_volume: drives, EFI disk, TPM state).
var volumeKeyRE = regexp.MustCompile(`^((scsi|virtio|sata|ide)[0-9]+|efidisk0|tpmstate0)$`)
