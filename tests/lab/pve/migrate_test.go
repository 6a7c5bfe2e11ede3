package pve

import (
	"net/url"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

// An out-of-band migration moves the config and the VM's disks: the old
// node answers "does not exist", the new one serves the VM.
func TestMigrateVM(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, err := node.NewVirtualMachine(ctx, 104, opt("name", "a"), opt("scsi0", "local-lvm:4"))
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	if err := s.MigrateVM(104, "pve2"); err != nil {
		t.Fatal(err)
	}
	_, err = node.VirtualMachine(ctx, 104)
	mustContain(t, err, "Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist")
	node2, _ := c.Node(ctx, "pve2")
	vm, err := node2.VirtualMachine(ctx, 104)
	if err != nil {
		t.Fatal(err)
	}
	if vm.Name != "a" {
		t.Fatalf("migrated VM: %+v", vm)
	}
	var content []map[string]any
	if err := c.Get(ctx, "/nodes/pve2/storage/local-lvm/content", &content); err != nil {
		t.Fatal(err)
	}
	if len(content) != 1 || content[0]["volid"] != "local-lvm:vm-104-disk-0" {
		t.Fatalf("pve2 local-lvm content: %v", content)
	}
	if err := s.MigrateVM(104, "pve2"); err == nil {
		t.Fatal("a migration to the node the VM is on was accepted")
	}
}

// TestMigrateAPI: POST .../migrate moves a stopped VM with its disks; a
// running one needs online=1 and with-local-disks=1 (all lab storage is
// local); an attached ISO, a local target, an unknown node and a token
// without VM.Migrate are refused as PVE refuses them.
func TestMigrateAPI(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	createVMs(t, c, []proxmox.VirtualMachineOption{opt("scsi0", "local-lvm:4"), opt("ide0", "local-lvm:cloudinit"), opt("memory", 512)}, 100, 101)
	createVMs(t, c, []proxmox.VirtualMachineOption{opt("scsi0", "local-lvm:4"), opt("ide2", "none,media=cdrom")}, 102)
	admin := s.APIToken()
	_, pre := apiCall(t, s, admin, "GET", "/nodes/pve1/qemu/100/migrate", nil)
	m := pre.(map[string]any)
	if m["running"] != float64(0) || len(m["allowed_nodes"].([]any)) != 2 || len(m["local_disks"].([]any)) != 2 {
		t.Errorf("preconditions: %v", m)
	}

	for _, c := range []struct{ path, target, want string }{
		{"/nodes/pve1/qemu/100/migrate", "pve1", "400 Parameter verification failed."},
		{"/nodes/pve1/qemu/100/migrate", "pve9", "500 no such cluster node 'pve9'"},
	} {
		if got, _ := apiCall(t, s, admin, "POST", c.path, url.Values{"target": {c.target}}); got != c.want {
			t.Errorf("target %s: %q, want %q", c.target, got, c.want)
		}
	}
	status, upid := apiCall(t, s, admin, "POST", "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve2"}})
	if status != "200 OK" || !strings.Contains(upid.(string), ":qmigrate:100:root@pam!lab:") {
		t.Fatalf("migrate: %s %v", status, upid)
	}
	if exit := taskEnd(t, s, upid); exit != "OK" {
		t.Fatalf("migration ended %q", exit)
	}
	if got, _ := apiCall(t, s, admin, "GET", "/nodes/pve2/qemu/100/config", nil); got != "200 OK" {
		t.Errorf("config on the target: %s", got)
	}
	_, content := apiCall(t, s, admin, "GET", "/nodes/pve2/storage/local-lvm/content?vmid=100", nil)
	if n := len(content.([]any)); n != 2 {
		t.Errorf("the target holds %d of the VM's 2 volumes", n)
	}

	// a running VM
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	vm, _ := node.VirtualMachine(ctx, 101)
	task, err := vm.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	if got, _ := apiCall(t, s, admin, "POST", "/nodes/pve1/qemu/101/migrate", url.Values{"target": {"pve2"}}); got != "500 can't migrate running VM without --online" {
		t.Errorf("running VM offline: %q", got)
	}
	_, upid = apiCall(t, s, admin, "POST", "/nodes/pve1/qemu/101/migrate", url.Values{"target": {"pve2"}, "online": {"1"}})
	if exit := taskEnd(t, s, upid); exit != "migration aborted" || !strings.Contains(strings.Join(s.tasks[upid.(string)].lines(), "\n"),
		"can't live migrate attached local disks without with-local-disks option") {
		t.Errorf("live without with-local-disks: %q %v", exit, s.tasks[upid.(string)].lines())
	}
	_, upid = apiCall(t, s, admin, "POST", "/nodes/pve1/qemu/101/migrate", url.Values{"target": {"pve3"}, "online": {"1"}, "with-local-disks": {"1"}})
	if exit := taskEnd(t, s, upid); exit != "OK" {
		t.Errorf("live migration: %q", exit)
	}
	if _, st := apiCall(t, s, admin, "GET", "/nodes/pve3/qemu/101/status/current", nil); st.(map[string]any)["status"] != "running" {
		t.Errorf("after a live migration: %v", st)
	}

	// an attached ISO on local storage
	if _, err := s.Pveum("user add m@pve"); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.node("pve1").storage("local").volumes["iso/x.iso"] = &volume{storage: "local", name: "iso/x.iso", content: "iso", format: "iso", size: 1 << 20}
	s.vms[102].conf["ide2"] = "local:iso/x.iso,media=cdrom"
	s.mu.Unlock()
	_, upid = apiCall(t, s, admin, "POST", "/nodes/pve1/qemu/102/migrate", url.Values{"target": {"pve2"}})
	if exit := taskEnd(t, s, upid); exit != "migration aborted" || !strings.Contains(strings.Join(s.tasks[upid.(string)].lines(), "\n"),
		"can't migrate local disk 'local:iso/x.iso': local cdrom image") {
		t.Errorf("attached ISO: %q %v", exit, s.tasks[upid.(string)].lines())
	}
	if cur, _, _ := s.VMConfig(102); cur["lock"] != "" {
		t.Errorf("a failed migration left lock %q", cur["lock"])
	}

	// VM.Migrate
	tok, _ := s.Pveum("user token add m@pve tk --privsep 0")
	if got, _ := apiCall(t, s, tok, "POST", "/nodes/pve1/qemu/102/migrate", url.Values{"target": {"pve2"}}); got != "403 Permission check failed (/vms/102, VM.Migrate)" {
		t.Errorf("without VM.Migrate: %q", got)
	}
}
