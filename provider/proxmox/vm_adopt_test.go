package proxmox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	proxmoxres "github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// identityOf is the identity the creates of resource name get in tests
// (no provider instance: the URN alone).
func identityOf(name string) string { return proxmoxres.IdentityOf(urn(vmType, name)) }

func labTags(t *testing.T, e *env, vmid int) []string {
	t.Helper()
	cur, _, ok := e.lab.VMConfig(vmid)
	if !ok {
		t.Fatalf("VM %d is gone", vmid)
	}
	return pve.SplitTags(cur["tags"])
}

// A VM that an interrupted create made (it carries the resource's creating
// tag: stopped, no further configuration) is adopted by the next create of
// the same resource and finished: one VM, the same VMID, handed over.
func TestCreateAdoptsAnInterruptedCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	ctx := context.Background()
	node, err := e.adminClient().Node(ctx, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	id := identityOf("half")
	task, err := node.NewVirtualMachine(ctx, 321, proxmox.VirtualMachineOption{Name: "name", Value: "half"},
		proxmox.VirtualMachineOption{Name: "tags", Value: pve.CreatingTag(id)},
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:4"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, time.Minute); err != nil {
		t.Fatal(err)
	}
	in := property.NewMap(plainVM("pve1", "half"))
	_, st := e.create(vmType, "half", in)
	if vmid := getNum(t, st, "vmId"); vmid != 321 {
		t.Fatalf("created VM %d instead of adopting VM 321", vmid)
	}
	vms := e.lab.VMs()
	if len(vms) != 1 || vms[0].Status != "running" {
		t.Fatalf("VMs %+v", vms)
	}
	tags := labTags(t, e, 321)
	if !slices.Contains(tags, pve.OwnerTag(id, 321)) || pve.IsCreating(tags) {
		t.Fatalf("tags after the hand-over: %v", tags)
	}
	if tags := getStrings(st, "tags"); len(tags) != 0 {
		t.Fatalf("the provider's tags leak into the state: %v", tags)
	}
}

// A clone that an interrupted run started is still copying when the next
// create of the resource runs: the create waits for it and adopts it (its
// description carries the create's line), rather than cloning again; the
// source's description is what the clone keeps.
func TestCreateWaitsForAndAdoptsAnInterruptedClone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{TimeScale: 1})
	tid := e.createTemplate()
	ctx := context.Background()
	if err := e.lab.SetVMConfig(tid, "description", "golden image"); err != nil {
		t.Fatal(err)
	}
	id := identityOf("clone1")
	node, _ := e.adminClient().Node(ctx, "pve1")
	tmpl, err := node.VirtualMachine(ctx, tid)
	if err != nil {
		t.Fatal(err)
	}
	_, task, err := tmpl.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 330, Name: "clone1", Full: proxmox.IntOrBool(true),
		Description: pve.WithCreatingLine("golden image", id)})
	if err != nil {
		t.Fatal(err)
	}
	in := property.NewMap(map[string]property.Value{
		"node": str("pve1"), "name": str("clone1"), "started": boolean(false),
		"clone": obj(map[string]property.Value{"vmId": num(tid)}),
	})
	_, st := e.create(vmType, "clone1", in)
	if vmid := getNum(t, st, "vmId"); vmid != 330 {
		t.Fatalf("cloned VM %d instead of adopting VM 330 (clone task %s)", vmid, task.UPID)
	}
	if n := len(e.lab.VMs()); n != 2 {
		t.Fatalf("%d VMs, want the template and one clone: %+v", n, e.lab.VMs())
	}
	cur, _, _ := e.lab.VMConfig(330)
	if cur["description"] != "golden image" || !slices.Contains(pve.SplitTags(cur["tags"]), pve.OwnerTag(id, 330)) {
		t.Fatalf("clone after the hand-over: %v", cur)
	}
}

// A replacement never adopts the VM it replaces, nor a VM another stack's
// create left (another identity); a half-made copy on a node the inputs do
// not name is destroyed, not adopted.
func TestCreateAdoptsOnlyItsOwnHalfMadeVM(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	ctx := context.Background()
	mk := func(node string, vmid int, tag string) {
		n, _ := e.adminClient().Node(ctx, node)
		task, err := n.NewVirtualMachine(ctx, vmid, proxmox.VirtualMachineOption{Name: "tags", Value: tag})
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Wait(ctx, 10*time.Millisecond, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	id := identityOf("vm")
	mk("pve1", 401, pve.CreatingTag("0123456789abcdef0123")) // another stack's
	mk("pve2", 402, pve.CreatingTag(id))                     // ours, on the wrong node
	mk("pve1", 403, pve.OwnerTag(id, 403))                   // ours, handed over: the VM the state holds
	// a replacement: the engine's Check with the old inputs, its Diff with
	// the state, then the create
	olds := property.NewMap(plainVM("pve1", "vm"))
	state := olds.Set("vmId", num(403)).Set("smbiosUuid", str("")).Set("status", str("stopped")).
		Set("macAddresses", arr()).Set("ipv4Addresses", arr()).Set("ipv6Addresses", arr())
	e.diff(vmType, "vm", "pve1/403", state, olds, olds)
	_, st := e.createReplacement(vmType, "vm", olds, olds)
	vmid := getNum(t, st, "vmId")
	if vmid == 401 || vmid == 402 || vmid == 403 {
		t.Fatalf("the replacement adopted VM %d", vmid)
	}
	got := map[int]bool{}
	for _, vm := range e.lab.VMs() {
		got[vm.VMID] = true
	}
	if !got[401] || got[402] || !got[403] || !got[vmid] {
		t.Fatalf("VMs after the create: %v (want 401 and 403 kept, 402 destroyed, %d new)", got, vmid)
	}
}

// A download an interrupted create started is recognised by the identity
// its URL's fragment carries: one still running is awaited and adopted,
// one that finished is adopted (no "already exists" at preview), and none
// is downloaded twice. Another resource's file of that name is not.
func TestDownloadAdoptsAnInterruptedDownload(t *testing.T) {
	// its own resource name: what Check and Diff record per URN (fresh,
	// held) is process-wide, and a parallel test's Diff of another "iso"
	// made this create a replacement that adopts nothing
	t.Parallel()
	e := newEnv(t, lab.Options{TimeScale: 0.5})
	ctx := context.Background()
	in := isoInputs("pve2")
	storage, fetched := e.startInterruptedDownload(ctx, in, "iso-adopt")
	fileID, state := e.create(downloadType, "iso-adopt", in)
	if fileID != "pve2/local:iso/lablinux-1.0-agent.iso" || state.Get("size").AsNumber() <= 0 {
		t.Fatalf("create: %s %v", fileID, state)
	}
	downloads := e.downloadTasks
	if n := downloads(); n != 1 {
		t.Fatalf("%d downloads, want the interrupted one only", n)
	}
	// finished before the next create: adopted too, also at preview
	e.delete(downloadType, "iso-adopt", fileID, state)
	task, err := storage.DownloadURL(ctx, "iso", "lablinux-1.0-agent.iso", fetched)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, time.Minute); err != nil {
		t.Fatal(err)
	}
	if f := e.checkFailures(downloadType, "iso-adopt", property.Map{}, in); len(f) != 0 {
		t.Fatalf("preview of a finished interrupted download: %v", f)
	}
	e.create(downloadType, "iso-adopt", in)
	if n := downloads(); n != 2 {
		t.Fatalf("%d downloads, want 2 (the two interrupted ones, no other)", n)
	}
	if f := e.checkFailures(downloadType, "other", property.Map{}, in); len(f) != 1 {
		t.Fatalf("another resource's preview of the same file: %v", f)
	}
}

// A download task that has started but not yet written its first log
// line ("downloading <url> to <path>": the worker forks, then prints it)
// is not yet known as this resource's. The create reads the log again
// until the line shows instead of downloading the file a second time (the
// race that failed TestDownloadAdoptsAnInterruptedDownload once in CI).
// The lab holds the interrupted download before its first line and lets it
// go once the create has read its log, or, for a host slower than those
// re-reads, once the create waits for the task (review s15 C4).
func TestDownloadAwaitsTheFirstLogLineOfARunningDownload(t *testing.T) {
	t.Parallel()
	t.Run("the line comes while the log is read", func(t *testing.T) {
		t.Parallel()
		testRunningDownloadWithoutItsLine(t, "iso-early", "GET /nodes/{node}/tasks/{upid}/log")
	})
	// a host slower than the log's re-reads: the create waits for the task
	t.Run("the line comes later", func(t *testing.T) {
		t.Parallel()
		testRunningDownloadWithoutItsLine(t, "iso-late", "GET /nodes/{node}/tasks/{upid}/status")
	})
}

// testRunningDownloadWithoutItsLine holds the interrupted run's download
// before its first log line until the create has made a call to release;
// the create must then adopt it rather than download again.
func testRunningDownloadWithoutItsLine(t *testing.T, name, release string) {
	e := newEnv(t, lab.Options{TimeScale: 0.5})
	ctx := context.Background()
	e.lab.PVE.SetFaults(labpve.Faults{Script: []labpve.FaultRule{{Task: "download", Hold: true}}})
	in := isoInputs("pve2")
	e.startInterruptedDownload(ctx, in, name)
	checked := e.check(downloadType, name, property.Map{}, in)
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Create(p.CreateRequest{Urn: urn(downloadType, name), Properties: checked})
		done <- err
	}()
	if createErr := releasedWhenCalled(e, done, release); createErr != nil {
		t.Fatalf("create: %v", createErr)
	}
	if n := e.downloadTasks(); n != 1 {
		t.Fatalf("%d downloads, want the interrupted one only", n)
	}
}

// A VM an interrupted create left on the vmId the inputs pin is no
// conflict at preview: the create adopts it. Another VM on that vmId is.
func TestPinnedVMIDHeldByAnInterruptedCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	ctx := context.Background()
	node, _ := e.adminClient().Node(ctx, "pve1")
	for vmid, tag := range map[int]string{450: pve.CreatingTag(identityOf("pinned")), 451: "someone-else"} {
		task, err := node.NewVirtualMachine(ctx, vmid, proxmox.VirtualMachineOption{Name: "tags", Value: tag})
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Wait(ctx, 10*time.Millisecond, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	in := property.NewMap(plainVM("pve1", "pinned")).Set("vmId", num(450))
	if f := e.checkFailures(vmType, "pinned", property.Map{}, in); len(f) != 0 {
		t.Fatalf("preview of the interrupted create: %v", f)
	}
	if _, st := e.create(vmType, "pinned", in); getNum(t, st, "vmId") != 450 {
		t.Fatalf("create: %v", st)
	}
	other := property.NewMap(plainVM("pve1", "other")).Set("vmId", num(451))
	if f := e.checkFailures(vmType, "other", property.Map{}, other); len(f) != 1 || f[0].Property != "vmId" {
		t.Fatalf("preview of a vmId another VM holds: %v", f)
	}
}

// A create whose answer was lost after Proxmox ran it (a proxy failing on
// the way back) goes on with the VM it made, which carries the create's
// identity: the create succeeds in the same run, with one VM.
func TestCreateGoesOnWhenItsAnswerWasLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	e.lab.SetFaults(labpve.Faults{Script: []labpve.FaultRule{{Call: "POST /nodes/{node}/qemu", Lost: true}}})
	_, st := e.create(vmType, "lost", property.NewMap(plainVM("pve1", "lost")))
	vms := e.lab.VMs()
	if len(vms) != 1 || vms[0].Status != "running" || vms[0].VMID != getNum(t, st, "vmId") {
		t.Fatalf("VMs %+v, state vmId %d", vms, getNum(t, st, "vmId"))
	}
	if n := len(e.lab.PVE.FaultStrikes()); n != 1 {
		t.Fatalf("%d faults struck, want 1", n)
	}
}

// A create whose answer was lost while its task still runs (a slow
// storage: the VM shows only "lock: create", its identity comes with the
// task's end) waits for that task, then goes on with the VM in the same
// run; it used to fail and leave the VM to the next update.
func TestCreateWaitsForItsOwnTaskWhenItsAnswerWasLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	e.lab.SetFaults(labpve.Faults{Script: []labpve.FaultRule{
		{Call: "POST /nodes/{node}/qemu", Lost: true}, {Task: "qmcreate", Hold: true}}})
	checked := e.check(vmType, "slow", property.Map{}, property.NewMap(plainVM("pve1", "slow")))
	type result struct {
		st  property.Map
		err error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := e.s.Create(p.CreateRequest{Urn: urn(vmType, "slow"), Properties: checked})
		done <- result{resp.Properties, err}
	}()
	// release the held task once the create looks for it
	res := releasedWhenCalled(e, done, "GET /nodes/{node}/tasks")
	if res.err != nil {
		t.Fatalf("create: %v", res.err)
	}
	vms := e.lab.VMs()
	if len(vms) != 1 || vms[0].Status != "running" || vms[0].VMID != getNum(t, res.st, "vmId") {
		t.Fatalf("VMs %+v, state vmId %d", vms, getNum(t, res.st, "vmId"))
	}
}

// A create whose call failed while another client made a VM with the same
// VMID never takes that VM for its own: it is not this create's (it does
// not carry its identity), so the create fails naming the vmId, and the
// other VM keeps its tags; the state gets no VM.
func TestCreateNeverClaimsAnotherClientsVM(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := plainVM("pve1", "mine")
	in["vmId"] = num(4321)
	checked := e.check(vmType, "mine", property.Map{}, property.NewMap(in))

	// between the check and the create another user makes VM 4321, and the
	// create call is answered with a plain 500 before it does anything
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := e.adminClient().Node(ctx, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	task, err := n.NewVirtualMachine(ctx, 4321, proxmox.VirtualMachineOption{Name: "name", Value: "theirs"},
		proxmox.VirtualMachineOption{Name: "tags", Value: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.WaitFor(ctx, 60); err != nil {
		t.Fatal(err)
	}
	e.lab.SetFaults(labpve.Faults{Script: []labpve.FaultRule{{Call: "POST /nodes/{node}/qemu"}}})

	resp, err := e.s.Create(p.CreateRequest{Urn: urn(vmType, "mine"), Properties: checked})
	if err == nil || resp.ID != "" || !strings.Contains(err.Error(), "vmId 4321 is already in use") {
		t.Fatalf("create: id %q, err %v; want no VM and an error naming vmId 4321", resp.ID, err)
	}
	if tags := labTags(t, e, 4321); !slices.Equal(tags, []string{"someone-else"}) {
		t.Fatalf("the other client's VM 4321 now has tags %v", tags)
	}
	if vms := e.lab.VMs(); len(vms) != 1 {
		t.Fatalf("VMs %+v, want only the other client's", vms)
	}
}

// startInterruptedDownload starts what a killed run of resource name left
// running: the download of in's file (isoInputs) into its node's local
// storage, its URL carrying the resource's identity. It returns the storage
// and that URL, to start it again.
func (e *env) startInterruptedDownload(ctx context.Context, in property.Map, name string) (*proxmox.Storage, string) {
	e.t.Helper()
	node, err := e.adminClient().Node(ctx, in.Get("node").AsString())
	if err != nil {
		e.t.Fatal(err)
	}
	storage, err := node.Storage(ctx, in.Get("storage").AsString())
	if err != nil {
		e.t.Fatal(err)
	}
	fetched := pve.DownloadURL(in.Get("url").AsString(), proxmoxres.IdentityOf(urn(downloadType, name)))
	if _, err := storage.DownloadURL(ctx, "iso", in.Get("fileName").AsString(), fetched); err != nil {
		e.t.Fatal(err)
	}
	return storage, fetched
}

// downloadTasks counts the download tasks the lab has run or runs.
func (e *env) downloadTasks() int {
	n := 0
	for _, task := range e.lab.PVE.Tasks() {
		if task.Type == "download" {
			n++
		}
	}
	return n
}
