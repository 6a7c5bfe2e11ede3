package pve_test

import (
	"maps"
	"testing"

	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// Privileges reads the whole tree once and answers every path it lists from
// it; a path it does not list is asked on its own, so that an ACL the tree
// hides (NoAccess on /nodes/pve2 under a role on /nodes: the tree leaves
// out paths without privileges) still counts. Every answer is what
// GET /access/permissions?path= answers for that path.
func TestPrivilegesReadTheTreeOnceAndAskOnlyWhatItDoesNotList(t *testing.T) {
	t.Parallel()
	s, _, _ := startLab(t, labpve.Options{})
	ctx, c := clientWithToken(t, s, `
pveum role add TalosVM --privs "VM.Allocate,VM.Audit"
pveum role add TalosDisk --privs "Datastore.AllocateSpace"
pveum role add TalosNode --privs "Sys.Audit"
pveum user add pulumi@pve
pveum user token add pulumi@pve ci --privsep 1
pveum acl modify /vms --roles TalosVM --users pulumi@pve --tokens 'pulumi@pve!ci'
pveum acl modify /storage/local-lvm --roles TalosDisk --users pulumi@pve --tokens 'pulumi@pve!ci'
pveum acl modify /nodes --roles TalosNode --users pulumi@pve --tokens 'pulumi@pve!ci'
pveum acl modify /nodes/pve2 --roles NoAccess --tokens 'pulumi@pve!ci'
`, "pulumi@pve!ci")
	s.ResetStats()
	inTree := []string{"/vms", "/storage/local-lvm", "/nodes", "/access", "/"}
	notInTree := []string{"/nodes/pve1", "/nodes/pve2", "/sdn/zones/localnetwork/vmbr0"}
	for range 2 {
		for _, path := range append(append([]string{}, inTree...), notInTree...) {
			got, err := c.Privileges(ctx, path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if want := s.Permissions("pulumi@pve!ci", path); !maps.Equal(got, want) {
				t.Errorf("privileges on %s: %v, Proxmox answers %v for that path", path, got, want)
			}
		}
	}
	if got, _ := c.Privileges(ctx, "/nodes/pve2"); len(got) != 0 {
		t.Errorf("/nodes/pve2 (NoAccess for the token) holds %v", got)
	}
	if got, _ := c.Privileges(ctx, "/nodes/pve1"); !got["Sys.Audit"] {
		t.Errorf("/nodes/pve1 (TalosNode propagated from /nodes) holds %v, want Sys.Audit", got)
	}
	// the tree, then each path it does not list once
	if n, want := s.Stats().ByKind["GET /access/permissions"], 1+len(notInTree); n != want {
		t.Errorf("%d permission reads for %d paths asked twice, want %d (the tree and each unlisted path once)",
			n, len(inTree)+len(notInTree), want)
	}
}
