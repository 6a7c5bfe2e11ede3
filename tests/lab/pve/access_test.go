package pve

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// apiCall is one raw API request with token tok: the status line (which
// carries PVE's message) and the decoded "data".
func apiCall(t *testing.T, s *Server, tok, method, path string, form url.Values) (string, any) {
	t.Helper()
	status, body := rawCall(t, s, method, path, "PVEAPIToken="+tok, form)
	var out struct{ Data any }
	_ = json.Unmarshal([]byte(body), &out)
	return status, out.Data
}

// createVMs creates VMs on pve1 with the admin token.
func createVMs(t *testing.T, c *proxmox.Client, opts []proxmox.VirtualMachineOption, ids ...int) {
	t.Helper()
	ctx := ctxT(t)
	node, err := c.Node(ctx, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		task, err := node.NewVirtualMachine(ctx, id, opts...)
		if err != nil {
			t.Fatal(err)
		}
		waitOK(t, ctx, task)
	}
}

// taskEnd waits for the lab's task upid and returns its exit status.
func taskEnd(t *testing.T, s *Server, upid any) string {
	t.Helper()
	s.mu.Lock()
	tsk := s.tasks[fmt.Sprint(upid)]
	s.mu.Unlock()
	if tsk == nil {
		t.Fatalf("no task %v", upid)
	}
	<-tsk.finished
	return tsk.exit
}

func pveum(t *testing.T, s *Server, lines ...string) string {
	t.Helper()
	var last string
	for _, l := range lines {
		out, err := s.Pveum(l)
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		last = out
	}
	return last
}

func privs(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// TestBuiltinRoles: the predefined roles hold the privileges
// pve-access-control's create_roles gives them.
func TestBuiltinRoles(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"PVEDatastoreUser": {"Datastore.AllocateSpace", "Datastore.Audit"},
		"PVEAuditor": {"Datastore.Audit", "Mapping.Audit", "Pool.Audit", "SDN.Audit", "Sys.Audit",
			"VM.Audit", "VM.GuestAgent.Audit"},
		"PVETemplateUser": {"VM.Audit", "VM.Clone"},
		"PVEVMAdmin": {"VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU",
			"VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network",
			"VM.Config.Options", "VM.Console", "VM.GuestAgent.Audit", "VM.GuestAgent.FileRead",
			"VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite", "VM.GuestAgent.Unrestricted", "VM.Migrate",
			"VM.PowerMgmt", "VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback"},
		"PVESDNUser":  {"SDN.Audit", "SDN.Use"},
		"PVESysAdmin": {"Sys.Audit", "Sys.Console", "Sys.Syslog"},
	}
	for role, want := range cases {
		if got := privs(builtinRoles[role]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", role, got, want)
		}
	}
	if builtinRoles["PVEAdmin"]["Permissions.Modify"] || builtinRoles["PVEAdmin"]["Sys.Modify"] || builtinRoles["PVEAdmin"]["Mapping.Modify"] {
		t.Errorf("PVEAdmin holds a root-only privilege: %v", privs(builtinRoles["PVEAdmin"]))
	}
	if len(builtinRoles["Administrator"]) != len(validPrivs) || len(builtinRoles["NoAccess"]) != 0 {
		t.Error("Administrator must hold every privilege and NoAccess none")
	}
}

// TestPrivsepTokenIntersectsWithUser: a token with privilege separation
// holds what both its own ACLs and its user's give; propagation,
// --propagate 0 and NoAccess work per path.
func TestPrivsepTokenIntersectsWithUser(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{})
	pveum(t, s,
		"user add ops@pve",
		"user token add ops@pve sep",
		"user token add ops@pve full --privsep 0",
		"acl modify /vms --roles PVEVMAdmin --users ops@pve",
		"acl modify / --roles PVEAuditor --tokens ops@pve!sep",
		"acl modify /vms/100 --roles PVEVMAdmin --tokens ops@pve!sep",
		"acl modify /storage --roles PVEDatastoreAdmin --tokens ops@pve!sep",
		"acl modify /nodes --roles PVEAuditor --users ops@pve --propagate 0",
		"acl modify /vms/105 --roles NoAccess --users ops@pve",
	)
	for _, c := range []struct {
		id, path string
		want     []string
	}{
		// the token's VM admin on /vms/100, within the user's VM admin
		{"ops@pve!sep", "/vms/100", privs(builtinRoles["PVEVMAdmin"])},
		// only auditing from / on another VM: the user's VM admin does not widen it
		{"ops@pve!sep", "/vms/101", []string{"VM.Audit", "VM.GuestAgent.Audit"}},
		// the user holds nothing on storage: the token's datastore admin gives nothing
		{"ops@pve!sep", "/storage/local", nil},
		// not propagated below /nodes
		{"ops@pve", "/nodes", []string{"Datastore.Audit", "Mapping.Audit", "Pool.Audit", "SDN.Audit", "Sys.Audit", "VM.Audit", "VM.GuestAgent.Audit"}},
		{"ops@pve", "/nodes/pve1", nil},
		{"ops@pve!full", "/vms/101", privs(builtinRoles["PVEVMAdmin"])},
		{"ops@pve!full", "/vms/105", nil},
		{"ops@pve!sep", "/vms/105", nil},
	} {
		if got := privs(s.Permissions(c.id, c.path)); !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("%s on %s: %v, want %v", c.id, c.path, got, c.want)
		}
	}
	// propagate flags: the token's ACL on / propagates, the user's on /nodes does not
	if p := s.Permissions("ops@pve!sep", "/vms/101"); !p["VM.Audit"] {
		t.Errorf("VM.Audit on /vms/101 should be propagated: %v", p)
	}
	if p := s.Permissions("ops@pve", "/nodes"); p["Sys.Audit"] {
		t.Errorf("Sys.Audit on /nodes was given with --propagate 0: %v", p)
	}
}

// TestPoolRolesReachMembers: a role on /pool/<id> applies to the pool's
// VMs and storages, unless NoAccess on the member says otherwise.
func TestPoolRolesReachMembers(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{})
	if err := s.createTemplateForTest(9000); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.pools["team"] = &pool{id: "team", vms: map[int]bool{9000: true}, storage: map[string]bool{"local": true}}
	s.mu.Unlock()
	pveum(t, s, "user add dev@pve", "acl modify /pool/team --roles PVETemplateUser,PVEDatastoreUser --users dev@pve")
	if got := privs(s.Permissions("dev@pve", "/vms/9000")); !reflect.DeepEqual(got, []string{"Datastore.AllocateSpace", "Datastore.Audit", "VM.Audit", "VM.Clone"}) {
		t.Errorf("pool member /vms/9000: %v", got)
	}
	if got := privs(s.Permissions("dev@pve", "/storage/local")); !reflect.DeepEqual(got, []string{"Datastore.AllocateSpace", "Datastore.Audit", "VM.Audit", "VM.Clone"}) {
		t.Errorf("pool member /storage/local: %v", got)
	}
	if got := s.Permissions("dev@pve", "/vms/9001"); len(got) != 0 {
		t.Errorf("a VM outside the pool: %v", got)
	}
	pveum(t, s, "acl modify /vms/9000 --roles NoAccess --users dev@pve")
	if got := s.Permissions("dev@pve", "/vms/9000"); len(got) != 0 {
		t.Errorf("NoAccess on the member must win over the pool: %v", got)
	}
}

// TestForbiddenAnswersUsePVEWording: a token without the privilege an
// endpoint's schema entry names gets 403 "Permission check failed (<path>,
// <priv>)"; an "or" test that fails names nothing; task entries carry user
// and tokenid.
func TestForbiddenAnswersUsePVEWording(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	createVMs(t, c, []proxmox.VirtualMachineOption{opt("scsi0", "local-lvm:4")}, 100)
	pveum(t, s, "user add ci@pve", "acl modify / --roles PVEAuditor --users ci@pve")
	tok := pveum(t, s, "user token add ci@pve ro --privsep 0")
	if !strings.HasPrefix(tok, "ci@pve!ro=") {
		t.Fatalf("token add printed %q", tok)
	}
	for _, c := range []struct{ method, path, want string }{
		{"DELETE", "/nodes/pve1/qemu/100", "403 Permission check failed (/vms/100, VM.Allocate)"},
		{"POST", "/nodes/pve1/qemu/100/status/start", "403 Permission check failed (/vms/100, VM.PowerMgmt)"},
		{"DELETE", "/nodes/pve1/storage/local-lvm/content/local-lvm:vm-100-disk-0", "403 Permission check failed (/storage/local-lvm, Datastore.Allocate)"},
		{"POST", "/nodes/pve1/storage/local/download-url?content=iso&filename=a.iso&url=https%3A%2F%2Fexample.com%2Fa.iso", "403 Permission check failed (/storage/local, Datastore.AllocateTemplate)"},
		{"GET", "/nodes/pve1/qemu/100/status/current", "200 OK"},
		// an unknown node is refused for the permission before the lookup fails
		{"POST", "/nodes/nosuch/qemu/100/status/start", "403 Permission check failed (/vms/100, VM.PowerMgmt)"},
	} {
		if got, _ := apiCall(t, s, tok, c.method, c.path, nil); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.method, c.path, got, c.want)
		}
	}
	// Datastore.AllocateTemplate alone: the "or" of Sys.Audit+Sys.Modify on
	// / and Sys.AccessNetwork on the node fails without naming either.
	pveum(t, s, "acl modify /storage --roles PVEDatastoreAdmin --users ci@pve")
	if got, _ := apiCall(t, s, tok, "POST", "/nodes/pve1/storage/local/download-url?content=iso&filename=a.iso&url=https%3A%2F%2Fexample.com%2Fa.iso", nil); got != "403 Permission check failed" {
		t.Errorf("download-url without network access: %q", got)
	}
	// a restricted token's task reports its user and token id apart
	pveum(t, s, "role add Power --privs VM.PowerMgmt", "acl modify /vms/100 --roles Power --users ci@pve")
	status, upid := apiCall(t, s, tok, "POST", "/nodes/pve1/qemu/100/status/start", nil)
	if status != "200 OK" || !strings.HasSuffix(upid.(string), ":ci@pve!ro:") {
		t.Fatalf("start: %s %v", status, upid)
	}
	_, st := apiCall(t, s, tok, "GET", "/nodes/pve1/tasks/"+upid.(string)+"/status", nil)
	if m := st.(map[string]any); m["user"] != "ci@pve" || m["tokenid"] != "ro" {
		t.Errorf("task status user/tokenid: %v", m)
	}
	// the admin token's own task: another owner, readable with Sys.Audit on the node
	_, list := apiCall(t, s, tok, "GET", "/nodes/pve1/tasks", nil)
	if n := len(list.([]any)); n != 2 {
		t.Errorf("an auditor of the node lists %d tasks, want 2", n)
	}
}

// TestTasksOfOthersNeedSysAudit: without Sys.Audit on the node a token
// reads its own tasks only.
func TestTasksOfOthersNeedSysAudit(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	createVMs(t, c, []proxmox.VirtualMachineOption{opt("scsi0", "local-lvm:4")}, 100)
	pveum(t, s, "user add ci@pve", "acl modify /vms --roles PVEVMAdmin --users ci@pve")
	tok := pveum(t, s, "user token add ci@pve tk --privsep 0")
	_, tasks := apiCall(t, s, s.APIToken(), "GET", "/nodes/pve1/tasks", nil)
	upid := tasks.([]any)[0].(map[string]any)["upid"].(string)
	if got, _ := apiCall(t, s, tok, "GET", "/nodes/pve1/tasks/"+upid+"/status", nil); got != "403 Permission check failed (/nodes/pve1, Sys.Audit)" {
		t.Errorf("status of the admin's task: %q", got)
	}
	if _, list := apiCall(t, s, tok, "GET", "/nodes/pve1/tasks", nil); len(list.([]any)) != 0 {
		t.Errorf("tasks of others listed: %v", list)
	}
}

// TestListsShowWhatTheCallerMaySee: resources, nodes, storages, VMs and
// bridges are filtered by privilege, as PVE filters them.
func TestListsShowWhatTheCallerMaySee(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	createVMs(t, c, []proxmox.VirtualMachineOption{opt("memory", 512)}, 100, 101)
	pveum(t, s, "user add v@pve", "acl modify /vms/101 --roles PVEAuditor --users v@pve")
	tok := pveum(t, s, "user token add v@pve tk --privsep 0")
	_, res := apiCall(t, s, tok, "GET", "/cluster/resources", nil)
	var vms, storages int
	for _, e := range res.([]any) {
		m := e.(map[string]any)
		switch m["type"] {
		case "qemu":
			vms++
			if m["vmid"] != float64(101) {
				t.Errorf("VM %v listed without VM.Audit", m["vmid"])
			}
		case "storage":
			storages++
		case "node":
			if _, ok := m["maxmem"]; ok {
				t.Errorf("node %v shows its memory without Sys.Audit", m["node"])
			}
		}
	}
	if vms != 1 || storages != 0 {
		t.Errorf("resources: %d VMs, %d storages; want 1 and 0", vms, storages)
	}
	if _, list := apiCall(t, s, tok, "GET", "/nodes/pve1/storage", nil); len(list.([]any)) != 0 {
		t.Errorf("storages listed without Datastore.Audit: %v", list)
	}
	if _, list := apiCall(t, s, tok, "GET", "/nodes/pve1/network?type=any_bridge", nil); len(list.([]any)) != 0 {
		t.Errorf("bridges listed without SDN.Audit or SDN.Use: %v", list)
	}
	pveum(t, s, "acl modify /sdn/zones/localnetwork --roles PVESDNUser --users v@pve",
		"acl modify /nodes/pve1 --roles PVEAuditor --users v@pve")
	if _, list := apiCall(t, s, tok, "GET", "/nodes/pve1/network?type=any_bridge", nil); len(list.([]any)) != 1 {
		t.Errorf("bridges with SDN.Use on the zone: %v", list)
	}
	_, nodes := apiCall(t, s, tok, "GET", "/nodes", nil)
	for _, e := range nodes.([]any) {
		m := e.(map[string]any)
		if _, ok := m["maxmem"]; ok != (m["node"] == "pve1") {
			t.Errorf("node %v: memory shown %v, want only with Sys.Audit on it", m["node"], ok)
		}
	}
}

// TestAccessPermissionsEndpoint: GET /access/permissions answers for the
// caller, for a path, for its own tokens, and for others only with
// Sys.Audit on /access.
func TestAccessPermissionsEndpoint(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{})
	pveum(t, s, "user add a@pve", "user add b@pve", "role add VMPower --privs VM.PowerMgmt,VM.Audit",
		"acl modify /vms --roles VMPower --users a@pve")
	tok := pveum(t, s, "user token add a@pve tk --privsep 0")
	_, all := apiCall(t, s, tok, "GET", "/access/permissions", nil)
	want := map[string]any{"/vms": map[string]any{"VM.Audit": float64(1), "VM.PowerMgmt": float64(1)}}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("own permissions: %v, want %v", all, want)
	}
	_, one := apiCall(t, s, tok, "GET", "/access/permissions?path=/vms/104", nil)
	if !reflect.DeepEqual(one, map[string]any{"/vms/104": map[string]any{"VM.Audit": float64(1), "VM.PowerMgmt": float64(1)}}) {
		t.Errorf("path /vms/104: %v", one)
	}
	_, none := apiCall(t, s, tok, "GET", "/access/permissions?path=/storage", nil)
	if !reflect.DeepEqual(none, map[string]any{"/storage": map[string]any{}}) {
		t.Errorf("path without privileges: %v", none)
	}
	if got, _ := apiCall(t, s, tok, "GET", "/access/permissions?userid=b@pve", nil); got != "403 Permission check failed (/access, Sys.Audit)" {
		t.Errorf("another user's permissions: %q", got)
	}
	_, admin := apiCall(t, s, s.APIToken(), "GET", "/access/permissions?userid=a@pve!tk&path=/vms/1000", nil)
	if len(admin.(map[string]any)["/vms/1000"].(map[string]any)) != 2 {
		t.Errorf("admin asking for a@pve!tk: %v", admin)
	}
	// the admin token itself (root@pam's, no privilege separation) holds everything
	_, root := apiCall(t, s, s.APIToken(), "GET", "/access/permissions?path=/", nil)
	if n := len(root.(map[string]any)["/"].(map[string]any)); n != len(validPrivs) {
		t.Errorf("admin token holds %d privileges on /, want all %d", n, len(validPrivs))
	}
}

// TestRefusedTokens: unknown tokens, wrong secrets, disabled users and
// removed tokens are refused with 401.
func TestRefusedTokens(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{})
	pveum(t, s, "user add x@pve")
	tok := pveum(t, s, "user token add x@pve tk")
	if got, _ := apiCall(t, s, tok, "GET", "/version", nil); got != "200 OK" {
		t.Fatalf("valid token: %q", got)
	}
	id, _, _ := strings.Cut(tok, "=")
	for name, bad := range map[string]string{
		"wrong secret": id + "=00000000-0000-0000-0000-000000000000",
		"no such user": "y@pve!tk=" + strings.SplitN(tok, "=", 2)[1],
		"not a token":  "x@pve=abc",
	} {
		if got, _ := apiCall(t, s, bad, "GET", "/version", nil); got != "401 Authentication failed!" {
			t.Errorf("%s: %q", name, got)
		}
	}
	pveum(t, s, "user modify x@pve --enable 0")
	if got, _ := apiCall(t, s, tok, "GET", "/version", nil); got != "401 Authentication failed!" {
		t.Errorf("disabled user: %q", got)
	}
	pveum(t, s, "user modify x@pve --enable 1", "user token remove x@pve tk")
	if got, _ := apiCall(t, s, tok, "GET", "/version", nil); got != "401 Authentication failed!" {
		t.Errorf("removed token: %q", got)
	}
}

// TestRefusedTokenWaitsThreeSeconds: pve-http-server answers a refused
// login after 3 seconds (src/PVE/APIServer/AnyEvent.pm), which the lab
// scales by its time scale: at 0.2 no refusal comes before 600 ms.
func TestRefusedTokenWaitsThreeSeconds(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{TimeScale: 0.2})
	id, _, _ := strings.Cut(s.APIToken(), "=")
	start := time.Now()
	got, _ := apiCall(t, s, id+"=00000000-0000-0000-0000-000000000000", "GET", "/version", nil)
	if took := time.Since(start); got != "401 Authentication failed!" || took < 600*time.Millisecond {
		t.Errorf("a wrong secret: %q after %v, want 401 after 3 s × 0.2", got, took)
	}
}

// TestPveumErrors: pveum's refusals.
func TestPveumErrors(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{})
	pveum(t, s, "user add u@pve")
	for line, want := range map[string]string{
		"role add PVEMine --privs VM.Audit":                    "cannot use role ID starting with the (case-insensitive) 'PVE' namespace",
		"role add Mine --privs VM.Monitor":                     "invalid privilege 'VM.Monitor'",
		"acl modify /vms --roles Nope --users u@pve":           "role 'Nope' does not exist",
		"acl modify /vms --roles PVEAuditor --users n@pve":     "user 'n@pve' does not exist",
		"acl modify /nothing --roles PVEAuditor --users u@pve": "invalid ACL path '/nothing'",
		"acl modify /vms --roles PVEAuditor --tokens u@pve!xx": "no such token 'xx' for user 'u@pve'",
		"user add u@pve": "user 'u@pve' already exists",
	} {
		if _, err := s.Pveum(line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
}
