package pve

import (
	"net/url"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

// TestCreateChecksEachPrivilege: create_vm asks for VM.Allocate, then
// Datastore.AllocateSpace for each new disk, the VM.Config.* privilege of
// each option and SDN.Use on each bridge, in qemu-server's order.
func TestCreateChecksEachPrivilege(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{})
	pveum(t, s, "user add c@pve", "role add Alloc --privs VM.Allocate")
	tok := pveum(t, s, "user token add c@pve tk --privsep 0")
	form := url.Values{"vmid": {"200"}, "memory": {"1024"}, "scsi0": {"local-lvm:4"}, "net0": {"virtio,bridge=vmbr0"}}
	steps := []struct{ grant, want string }{
		{"", "403 Permission check failed"},
		{"acl modify /vms/200 --roles Alloc --users c@pve", "403 Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)"},
		{"acl modify /storage/local-lvm --roles PVEDatastoreUser --users c@pve", "403 Permission check failed (/vms/200, VM.Config.Memory)"},
		{"acl modify /vms/200 --roles PVEVMAdmin --users c@pve", "403 Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)"},
		{"acl modify /sdn/zones/localnetwork/vmbr0 --roles PVESDNUser --users c@pve", "200 OK"},
	}
	for _, st := range steps {
		if st.grant != "" {
			pveum(t, s, st.grant)
		}
		if got, _ := apiCall(t, s, tok, "POST", "/nodes/pve1/qemu", form); got != st.want {
			t.Fatalf("after %q: %q, want %q", st.grant, got, st.want)
		}
	}
	// root-only options stay root's, whatever the token holds
	pveum(t, s, "acl modify / --roles Administrator --users c@pve")
	form = url.Values{"vmid": {"201"}, "args": {"-no-reboot"}}
	if got, _ := apiCall(t, s, tok, "POST", "/nodes/pve1/qemu", form); got != "500 only root can set 'args' config" {
		t.Errorf("args: %q", got)
	}
}

// TestUpdateChecksCurrentValuesInTheWorker: the checks that depend on the
// VM's current config run in the qmconfig worker, so the task fails with
// the 403 message.
func TestUpdateChecksCurrentValuesInTheWorker(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	createVMs(t, c, []proxmox.VirtualMachineOption{opt("scsi0", "local-lvm:4"), opt("ide2", "local-lvm:cloudinit")}, 100)
	pveum(t, s, "user add u@pve", "role add Mem --privs VM.Config.Memory,VM.Config.Options",
		"acl modify /vms/100 --roles Mem --users u@pve")
	tok := pveum(t, s, "user token add u@pve tk --privsep 0")
	if got, _ := apiCall(t, s, tok, "POST", "/nodes/pve1/qemu/100/config", url.Values{"ciuser": {"x"}}); got != "403 Permission check failed (/vms/100, VM.Config.Cloudinit|VM.Config.Network)" {
		t.Errorf("ciuser: %q", got)
	}
	// replacing the cloud-init drive: VM.Config.Disk on the schema check passes
	// through "any", the worker then wants Cloudinit and CDROM for the old drive
	pveum(t, s, "role add Disk --privs VM.Config.Disk", "acl modify /vms/100 --roles Mem,Disk --users u@pve",
		"acl modify /storage --roles PVEDatastoreUser --users u@pve")
	status, upid := apiCall(t, s, tok, "POST", "/nodes/pve1/qemu/100/config", url.Values{"ide2": {"local-lvm:cloudinit"}, "tags": {"a"}})
	if status != "200 OK" {
		t.Fatalf("config: %s", status)
	}
	if exit := taskEnd(t, s, upid); exit != "Permission check failed (/vms/100, VM.Config.Cloudinit)" {
		t.Errorf("worker ended %q", exit)
	}
}

// TestPoolMembershipNeedsPermissionsModify: adding a VM to a pool changes
// who may use it: Permissions.Modify or VM.Allocate on the VM, reported
// inside pve-manager's "update pools failed" (a 500).
func TestPoolMembershipNeedsPermissionsModify(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	createVMs(t, c, []proxmox.VirtualMachineOption{opt("memory", 512)}, 100)
	if got, _ := apiCall(t, s, s.APIToken(), "POST", "/pools", url.Values{"poolid": {"k8s"}}); got != "200 OK" {
		t.Fatal(got)
	}
	pveum(t, s, "user add p@pve", "acl modify /pool/k8s --roles PVEPoolAdmin --users p@pve")
	tok := pveum(t, s, "user token add p@pve tk --privsep 0")
	form := url.Values{"poolid": {"k8s"}, "vms": {"100"}}
	if got, _ := apiCall(t, s, tok, "PUT", "/pools", form); got != "500 update pools failed: Permission check failed (/vms/100, Permissions.Modify|VM.Allocate)" {
		t.Errorf("pool add without VM.Allocate: %q", got)
	}
	pveum(t, s, "role add Alloc --privs VM.Allocate", "acl modify /vms/100 --roles Alloc --users p@pve")
	if got, _ := apiCall(t, s, tok, "PUT", "/pools", form); got != "200 OK" {
		t.Errorf("pool add: %q", got)
	}
	// the pool's roles now reach the VM, and destroying it drops both its
	// ACLs and its membership
	// (pool roles never propagate: the flag is false)
	if propagate, ok := s.Permissions("p@pve", "/vms/100")["Pool.Allocate"]; !ok || propagate {
		t.Errorf("pool roles on the member: %v", s.Permissions("p@pve", "/vms/100"))
	}
	status, upid := apiCall(t, s, s.APIToken(), "DELETE", "/nodes/pve1/qemu/100", nil)
	if status != "200 OK" {
		t.Fatal(status)
	}
	taskEnd(t, s, upid)
	if got := s.Permissions("p@pve", "/vms/100"); len(got) != 0 {
		t.Errorf("a destroyed VM's ACLs and pool roles stay: %v", got)
	}
}

// TestCloneNeedsSpaceOnTheSourceStorage: even a linked clone needs
// Datastore.AllocateSpace on the storage of the template's disks.
func TestCloneNeedsSpaceOnTheSourceStorage(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{})
	if err := s.createTemplateForTest(9000); err != nil {
		t.Fatal(err)
	}
	pveum(t, s, "user add k@pve", "acl modify /vms --roles PVEVMAdmin --users k@pve")
	tok := pveum(t, s, "user token add k@pve tk --privsep 0")
	form := url.Values{"newid": {"120"}, "full": {"0"}}
	if got, _ := apiCall(t, s, tok, "POST", "/nodes/pve1/qemu/9000/clone", form); got != "403 Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)" {
		t.Errorf("clone without storage access: %q", got)
	}
	pveum(t, s, "acl modify /storage --roles PVEDatastoreUser --users k@pve")
	if got, _ := apiCall(t, s, tok, "POST", "/nodes/pve1/qemu/9000/clone", form); got != "403 Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)" {
		t.Errorf("clone without the bridge: %q", got)
	}
	pveum(t, s, "acl modify /sdn/zones --roles PVESDNUser --users k@pve")
	if got, _ := apiCall(t, s, tok, "POST", "/nodes/pve1/qemu/9000/clone", form); !strings.HasPrefix(got, "200") {
		t.Errorf("clone: %q", got)
	}
}
