package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// VMRef names a VM: its node and VMID.
type VMRef struct {
	Node string
	VMID int
}

func (r VMRef) String() string { return fmt.Sprintf("VM %d on node %s", r.VMID, r.Node) }

func (r VMRef) path(suffix string) string {
	return fmt.Sprintf("/nodes/%s/qemu/%d%s", r.Node, r.VMID, suffix)
}

// VMConfig is a VM configuration as Proxmox returns it (pending changes
// applied), every value rendered as a string: "cores" -> "2",
// "net0" -> "virtio=BC:24:11:00:00:01,bridge=vmbr0".
type VMConfig map[string]string

// VMStatus is the runtime state of a VM (GET .../status/current).
type VMStatus struct {
	// Status is "running" or "stopped".
	Status string
	// QMPStatus is QEMU's finer state ("running", "paused", ...).
	QMPStatus string
	// Lock is the config lock held, if any ("clone", "create", "backup").
	Lock string
	// Agent reports whether the guest agent is enabled in the config.
	Agent bool
	// Name is the VM's name ("VM <vmid>" when it has none).
	Name string
}

// Running reports whether the VM's qemu runs (also while it is paused).
func (s VMStatus) Running() bool { return s.Status == "running" }

// Paused reports a VM whose qemu runs with its vCPUs stopped: paused by
// status/suspend ("paused") or suspended to RAM by its guest
// ("suspended"), both continued by status/resume (qemu-server
// QemuServer.pm vm_resume: "cont", or "system_wakeup" for "suspended").
// Nothing in such a VM runs, so it does not run as far as its guest goes.
func (s VMStatus) Paused() bool { return s.Running() && IsPausedStatus(s.QMPStatus) }

// PowerState is the state to report to a user: status, except that a
// running VM whose QEMU is paused is "paused" (or "suspended"), as the
// Proxmox UI and GET /cluster/resources say (pvestatd broadcasts qmpstatus).
func (s VMStatus) PowerState() string {
	if s.Paused() {
		return s.QMPStatus
	}
	return s.Status
}

// IsPausedStatus reports a QEMU run state (qmpstatus; also the status
// /cluster/resources gives, which is qmpstatus where qemu runs: pvestatd
// update_qemu_status) that status/resume continues.
func IsPausedStatus(s string) bool { return s == "paused" || s == "suspended" }

// decodeConfig renders Proxmox's JSON config object as strings. Numbers are
// kept as written (json.Number), so "memory": 2048 becomes "2048".
func decodeConfig(raw json.RawMessage) (VMConfig, error) {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("reading the VM configuration Proxmox returned: %w", err)
	}
	cfg := make(VMConfig, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			continue
		case string:
			cfg[k] = x
		case json.Number:
			cfg[k] = x.String()
		case bool:
			cfg[k] = paramString(x)
		default:
			b, _ := json.Marshal(x)
			cfg[k] = string(b)
		}
	}
	return cfg, nil
}

// VMConfig reads the VM's configuration with pending changes applied, which
// is what the next boot will run with.
func (c *Client) VMConfig(ctx context.Context, ref VMRef) (VMConfig, error) {
	var raw json.RawMessage
	err := DefaultRetry.Retry(ctx, "reading the configuration of "+ref.String(), true, func(ctx context.Context) error {
		// raw: every key is kept as text (VMConfig); VirtualMachineConfig drops
		// unknown keys, and Node.VirtualMachine reads status and config first
		return c.get(ctx, ref.path("/config"), &raw)
	})
	if err != nil {
		return nil, err
	}
	return decodeConfig(raw)
}

// VMStatus reads whether the VM runs.
func (c *Client) VMStatus(ctx context.Context, ref VMRef) (VMStatus, error) {
	var st VMStatus
	err := DefaultRetry.Retry(ctx, "reading the status of "+ref.String(), true, func(ctx context.Context) error {
		var err error
		st, err = c.vmStatusOnce(ctx, ref)
		return err
	})
	return st, err
}

// vmStatusOnce reads the VM's status once, without retries.
func (c *Client) vmStatusOnce(ctx context.Context, ref VMRef) (VMStatus, error) {
	var raw struct {
		Status    string          `json:"status"`
		QMPStatus string          `json:"qmpstatus"`
		Lock      string          `json:"lock"`
		Agent     json.RawMessage `json:"agent"`
		Name      string          `json:"name"`
	}
	// raw: VirtualMachine holds cpus as a plain int (qemu-server vmstatus copies
	// `vcpus` from the config text) and agent as IntOrBool, which refuses "1"
	if err := c.get(ctx, ref.path("/status/current"), &raw); err != nil {
		return VMStatus{}, err
	}
	agent := strings.Trim(string(raw.Agent), `"`)
	return VMStatus{Status: raw.Status, QMPStatus: raw.QMPStatus, Lock: raw.Lock,
		Agent: agent == "1" || agent == "true", Name: raw.Name}, nil
}

// CreateVM creates a VM with the given config parameters and waits for the
// create task. An "already exists" answer is returned as is, so that the
// caller can allocate another VMID.
func (c *Client) CreateVM(ctx context.Context, ref VMRef, params map[string]any) error {
	p := copyParams(params)
	p["vmid"] = ref.VMID
	return DefaultRetry.Retry(ctx, "creating "+ref.String(), false, func(ctx context.Context) error {
		return c.startTaskAt(ctx, "after-create-task-started", func(upid *string) error {
			// raw: Node.NewVirtualMachine needs Client.Node first (GET status)
			return c.madeBy(ref.VMID, c.post(ctx, fmt.Sprintf("/nodes/%s/qemu", ref.Node), p, upid))
		})
	})
}

// madeBy records vmid as made by this process when its create or clone
// call was accepted (err nil), and returns err. A call that failed is not
// recorded: the VM at vmid may be another client's (the call's answer may
// have been lost too; then the VM counts as another's, which only costs a
// read, see Unsettled).
func (c *Client) madeBy(vmid int, err error) error {
	if err == nil {
		c.made.Store(vmid, time.Now())
	}
	return err
}

// CloneOptions say how to clone a VM or template.
type CloneOptions struct {
	// Full makes an independent copy; false makes a linked clone of a template.
	Full bool
	// Storage is the target storage of a full clone ("" keeps the source's).
	Storage string
	// Name and Description of the new VM.
	Name        string
	Description string
	Pool        string
}

// CloneVM clones src into dst (dst.Node is the target node) and waits.
func (c *Client) CloneVM(ctx context.Context, src, dst VMRef, o CloneOptions) error {
	p := map[string]any{"newid": dst.VMID, "full": o.Full}
	if dst.Node != src.Node {
		p["target"] = dst.Node
	}
	if o.Storage != "" && o.Full {
		p["storage"] = o.Storage
	}
	if o.Name != "" {
		p["name"] = o.Name
	}
	if o.Description != "" {
		p["description"] = o.Description
	}
	if o.Pool != "" {
		p["pool"] = o.Pool
	}
	return DefaultRetry.Retry(ctx, fmt.Sprintf("cloning %s into VM %d on node %s", src, dst.VMID, dst.Node), false,
		func(ctx context.Context) error {
			return c.startTaskAt(ctx, "after-clone-task-started", func(upid *string) error {
				// raw: VirtualMachine.Clone reads the VM first and with NewID 0 takes
				// an id itself (racy); our allocator picks it
				return c.madeBy(dst.VMID, c.post(ctx, src.path("/clone"), p, upid))
			})
		})
}

// UpdateVMConfig sets params and deletes the keys in remove, through the
// asynchronous config call (needed when disks are allocated), and waits.
func (c *Client) UpdateVMConfig(ctx context.Context, ref VMRef, params map[string]any, remove []string) error {
	p := copyParams(params)
	if len(remove) > 0 {
		p["delete"] = strings.Join(remove, ",")
	}
	if len(p) == 0 {
		return nil
	}
	if changesMemory(params, remove) {
		claimed := claimedStart(ctx) != ""
		c.disc.memoryChanged(claimed)
		defer c.disc.memoryChanged(claimed)
	}
	return c.retryVM(ctx, ref, "updating the configuration of "+ref.String(), true, func(ctx context.Context) error {
		return c.startTask(ctx, func(upid *string) error {
			// raw: VirtualMachine.Config needs the VM read first (status + config)
			return c.post(ctx, ref.path("/config"), p, upid)
		})
	})
}

// ResizeDisk grows a disk to sizeGiB.
func (c *Client) ResizeDisk(ctx context.Context, ref VMRef, disk string, sizeGiB int) error {
	p := map[string]any{"disk": disk, "size": strconv.Itoa(sizeGiB) + "G"}
	return c.retryVM(ctx, ref, fmt.Sprintf("resizing disk %s of %s", disk, ref), true, func(ctx context.Context) error {
		return c.startTask(ctx, func(upid *string) error {
			// raw: VirtualMachine.ResizeDisk needs the VM read first
			return c.put(ctx, ref.path("/resize"), p, upid)
		})
	})
}

// MoveDisk moves a disk to another storage, deleting the source copy.
func (c *Client) MoveDisk(ctx context.Context, ref VMRef, disk, storage string) error {
	p := map[string]any{"disk": disk, "storage": storage, "delete": true}
	return c.retryVM(ctx, ref, fmt.Sprintf("moving disk %s of %s to storage %s", disk, ref, storage), false,
		func(ctx context.Context) error {
			return c.startTask(ctx, func(upid *string) error {
				// raw: VirtualMachine.MoveDisk needs the VM read first
				return c.post(ctx, ref.path("/move_disk"), p, upid)
			})
		})
}

// ConvertToTemplate turns a stopped VM into a template (POST .../template):
// its disks become read-only base volumes that clones share. A VM that is a
// template already is success, so that a retry after a lost answer (the
// second call fails "you can't convert a template to a template",
// qemu-server API2/Qemu.pm template) does not fail the operation.
func (c *Client) ConvertToTemplate(ctx context.Context, ref VMRef) error {
	err := c.retryVM(ctx, ref, "converting "+ref.String()+" into a template", false, func(ctx context.Context) error {
		// raw: VirtualMachine.ConvertToTemplate needs the VM read first
		return c.startTask(ctx, func(upid *string) error { return c.post(ctx, ref.path("/template"), nil, upid) })
	})
	if err == nil {
		return nil
	}
	if cfg, cerr := c.VMConfig(ctx, ref); cerr == nil && cfg["template"] == "1" {
		return nil
	}
	return err
}

// powerAction runs one status/<action> call and waits for its task. Such a
// call is safe to repeat once the VM is seen not to be in the state it
// brings about (done): after a server error, a proxy error or a task that
// failed for a passing cause, the VM's state is read, and a VM that is
// there already (the call ran, or someone else did it) is success. A
// failure with a cause that stays (a missing bridge, too little memory) is
// not repeated.
func (c *Client) powerAction(ctx context.Context, ref VMRef, action string, params map[string]any, done func(VMStatus) bool) error {
	// what the VM takes from its node changes, also when the call fails
	// half-way: voided before and after
	claimed := claimedStart(ctx)
	c.disc.memoryChanged(claimed != "")
	err := c.retryVM(ctx, ref, action+" "+ref.String(), done != nil, func(ctx context.Context) error {
		err := c.startTask(ctx, func(upid *string) error {
			// raw: VirtualMachine.Start/Stop/Shutdown need the VM read first
			return c.post(ctx, ref.path("/status/"+action), params, upid)
		})
		if err != nil && done != nil {
			if st, serr := c.vmStatusOnce(ctx, ref); serr == nil && done(st) {
				return nil
			}
		}
		return err
	})
	// a claimed start that ran: the claim now counts what the node lists
	// read before do not; a failed one is not covered by it
	if err == nil && claimed != "" && action == "start" {
		c.memory.Started(claimed)
	}
	c.disc.memoryChanged(claimed != "" && err == nil)
	return err
}

func running(st VMStatus) bool    { return st.Running() }
func notRunning(st VMStatus) bool { return !st.Running() }
func notPaused(st VMStatus) bool  { return st.Running() && !st.Paused() }

// StartVM starts the VM and waits until QEMU runs.
func (c *Client) StartVM(ctx context.Context, ref VMRef) error {
	return c.bootedBy(ref.VMID, c.powerAction(ctx, ref, "start", nil, running))
}

// bootedBy records that this process (re)started VM vmid now when err is
// nil, and returns err.
func (c *Client) bootedBy(vmid int, err error) error {
	if err == nil {
		c.started.Store(vmid, time.Now())
	}
	return err
}

// StartedAt is when this process last started or rebooted VM vmid (the
// task's end: QEMU runs, the guest boots), for the VM watch of Talos waits
// (provider/vmwatch), which gives a VM booting its firmware and OS time to
// answer before it asks Proxmox about it.
func (c *Client) StartedAt(vmid int) (time.Time, bool) {
	v, ok := c.started.Load(vmid)
	at, _ := v.(time.Time)
	return at, ok
}

// ResumeVM continues a paused VM (status/resume) and waits until its
// vCPUs run.
func (c *Client) ResumeVM(ctx context.Context, ref VMRef) error {
	return c.powerAction(ctx, ref, "resume", nil, notPaused)
}

// StopVM stops the VM at once (like pulling the plug).
func (c *Client) StopVM(ctx context.Context, ref VMRef) error {
	return c.powerAction(ctx, ref, "stop", nil, notRunning)
}

// ShutdownVM asks the guest to shut down (ACPI, or the agent when enabled)
// and stops it hard when it has not within timeout.
func (c *Client) ShutdownVM(ctx context.Context, ref VMRef, timeout time.Duration) error {
	return c.powerAction(ctx, ref, "shutdown", map[string]any{
		"timeout": int(timeout.Seconds()), "forceStop": true,
	}, notRunning)
}

// RebootVM is Proxmox's reboot: shut down, then start again (applying
// pending changes). It fails when the guest ignores the ACPI request. It
// is not repeated: whether a reboot happened cannot be seen afterwards.
func (c *Client) RebootVM(ctx context.Context, ref VMRef, timeout time.Duration) error {
	return c.bootedBy(ref.VMID, c.powerAction(ctx, ref, "reboot", map[string]any{"timeout": int(timeout.Seconds())}, nil))
}

// RestartVM shuts the VM down (stopping it hard after timeout) and starts it
// again, which applies pending configuration changes. Proxmox's own reboot
// fails when the guest ignores the ACPI request ("VM quit/powerdown failed -
// got timeout"), so shutdown with forceStop and start are used instead.
func (c *Client) RestartVM(ctx context.Context, ref VMRef, timeout time.Duration) error {
	if err := c.ShutdownVM(ctx, ref, timeout); err != nil {
		return err
	}
	return c.StartVM(ctx, ref)
}

// DeleteVM destroys a stopped VM with its disks, and removes it from backup
// jobs, replication and HA (purge). A VM that is already gone is success.
func (c *Client) DeleteVM(ctx context.Context, ref VMRef) error {
	p := map[string]any{"purge": true, "destroy-unreferenced-disks": true}
	// idempotent: destroying again a VM that the first call destroyed
	// answers "does not exist", which is success here
	err := c.retryVM(ctx, ref, "destroying "+ref.String(), true, func(ctx context.Context) error {
		return c.startTaskAt(ctx, "after-destroy-task-started", func(upid *string) error {
			// raw: VirtualMachine.Delete needs the VM read first
			return c.delete(ctx, ref.path(""), p, upid)
		})
	})
	if IsConfigMissing(err) {
		err = nil
	}
	if err == nil {
		// the VMID is free again: a VM another client makes there is not this process's
		c.made.Delete(ref.VMID)
	}
	return err
}

// PendingChange is a configuration change that waits for a restart.
type PendingChange struct {
	Key string
	// Delete is set when the key is to be removed.
	Delete bool
}

// PendingChanges lists changes that only take effect after a restart
// (GET .../pending: entries with a "pending" value or a "delete" flag).
func (c *Client) PendingChanges(ctx context.Context, ref VMRef) ([]PendingChange, error) {
	// go-proxmox's type (delete is 1 or 2, a number literal in PVE's
	// GuestHelpers.pm config_with_pending_array); not
	// VirtualMachine.Pending, which needs a VirtualMachine read first
	var items proxmox.PendingConfiguration
	err := DefaultRetry.Retry(ctx, "reading pending changes of "+ref.String(), true, func(ctx context.Context) error {
		return c.get(ctx, ref.path("/pending"), &items)
	})
	if err != nil {
		return nil, err
	}
	var out []PendingChange
	for _, it := range items {
		del := it.Delete != nil && *it.Delete != 0
		if del || it.Pending != nil {
			out = append(out, PendingChange{Key: it.Key, Delete: del})
		}
	}
	return out, nil
}

// RegenerateCloudInit rebuilds the cloud-init drive from the current
// configuration (PVE 7.2+), so that the next boot of the guest sees it.
func (c *Client) RegenerateCloudInit(ctx context.Context, ref VMRef) error {
	return c.retryVM(ctx, ref, "regenerating the cloud-init drive of "+ref.String(), true, func(ctx context.Context) error {
		// raw: VirtualMachine.CloudInitRegenerate needs the VM read first
		return c.put(ctx, ref.path("/cloudinit"), nil, nil)
	})
}

// Pools lists the resource pools the token can see. PVE lists only pools
// the user holds Pool.Audit or Pool.Allocate on (pve-manager
// PVE/API2/Pool.pm index), and adding a VM to a pool needs Pool.Allocate, so
// a pool missing here cannot take the VM either.
func (c *Client) Pools(ctx context.Context) ([]string, error) {
	var items proxmox.Pools
	err := DefaultRetry.Retry(ctx, "listing the resource pools", true, func(ctx context.Context) error {
		var err error
		items, err = c.api.Pools(ctx) // one GET /pools, as c.get would send
		return apiErrorFrom(http.MethodGet, "/pools", err)
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.PoolID)
	}
	return out, nil
}

// SetPool moves the VM into pool, or out of from when pool is "".
func (c *Client) SetPool(ctx context.Context, vmid int, from, pool string) error {
	return DefaultRetry.Retry(ctx, fmt.Sprintf("changing the pool of VM %d", vmid), true, func(ctx context.Context) error {
		if pool == "" {
			if from == "" {
				return nil
			}
			// raw: Pool.Update needs Client.Pool first (GET /pools/{id}) and
			// PoolUpdateOption has no poolid for PUT /pools
			return c.put(ctx, "/pools", map[string]any{"poolid": from, "vms": vmid, "delete": true}, nil)
		}
		return c.put(ctx, "/pools", map[string]any{"poolid": pool, "vms": vmid, "allow-move": true}, nil)
	})
}

// StatusNodeDown is the status /cluster/resources lists for the guests of a
// node that reports nothing (pve-manager PVE/API2Tools.pm extract_vm_stats):
// nothing about such a guest can be checked.
const StatusNodeDown = "unknown"

// ClusterVM is one guest as /cluster/resources lists it: a VM, or with
// Type "lxc" a container (VMIDs are unique across both).
type ClusterVM struct {
	VMID int
	Type string // qemu or lxc
	Node string
	Name string
	// Status is "running", "stopped", StatusNodeDown while its node is
	// down, or for a qemu that runs, its QMP run state other than running
	// ("paused").
	Status   string
	Template bool
	Pool     string
	// Lock is the config lock the guest holds ("create", "clone", ...).
	Lock string
	// HAState is the HA manager's state of the guest's service ("started",
	// "recovery", "migrate", ...; pve-ha-manager src/PVE/HA/Manager.pm
	// $valid_service_states), "" when HA does not manage it.
	HAState string
	// Tags as Proxmox lists them (";"-separated, lower-cased, sorted).
	Tags []string
}

// Kind names the guest the way Proxmox's messages do: "VM" or "CT"
// (pve-cluster PVE/Cluster.pm check_vmid_unused).
func (g ClusterVM) Kind() string {
	if g.Type == "lxc" {
		return "CT"
	}
	return "VM"
}

// ClusterVMs lists every VM (qemu) of the cluster.
func (c *Client) ClusterVMs(ctx context.Context) ([]ClusterVM, error) {
	all, err := c.ClusterGuests(ctx)
	if err != nil {
		return nil, err
	}
	var out []ClusterVM
	for _, g := range all {
		if g.Type == "qemu" {
			out = append(out, g)
		}
	}
	return out, nil
}

// ClusterGuests lists every VM and container of the cluster: what a new
// VMID must not collide with.
func (c *Client) ClusterGuests(ctx context.Context) ([]ClusterVM, error) {
	inv, err := c.readInventory(ctx, "?type=vm")
	return inv.Guests, err
}

func copyParams(params map[string]any) map[string]any {
	p := make(map[string]any, len(params)+1)
	for k, v := range params {
		p[k] = v
	}
	return p
}
