package talos

import (
	"bytes"
	"crypto/sha256"
	"path/filepath"
	"testing"
)

func TestNodeEtcdAnswersFromTheCluster(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1, workers: 0})
	tc.bootstrap(t)

	ctx := ctxT(t)
	e := tc.cps[0].node.Etcd()

	members, err := e.Members(ctx, false)
	if err != nil || len(members) != 1 || members[0].Name != "cp1" {
		t.Fatalf("members = %+v, %v", members, err)
	}

	st, err := e.Status(ctx)
	if err != nil || st.MemberID != members[0].ID || st.Leader != st.MemberID || len(st.Errors) != 0 {
		t.Fatalf("status = %+v, %v", st, err)
	}

	if err := tc.sim.SetEtcdAlarm(tc.cps[0].node, "NOSPACE"); err != nil {
		t.Fatal(err)
	}

	if alarms, err := e.Alarms(ctx); err != nil || len(alarms) != 1 || alarms[0].Alarm != "NOSPACE" || alarms[0].MemberID != st.MemberID {
		t.Fatalf("alarms = %+v, %v", alarms, err)
	}

	if st, _ := e.Status(ctx); len(st.Errors) != 1 {
		t.Fatalf("status errors with an alarm: %v", st.Errors)
	}

	if cleared, err := e.DisarmAlarms(ctx); err != nil || len(cleared) != 1 {
		t.Fatalf("disarm = %+v, %v", cleared, err)
	}

	if alarms, _ := e.Alarms(ctx); len(alarms) != 0 {
		t.Fatalf("alarms after disarm: %+v", alarms)
	}

	// The only member leads and keeps leading: nobody to hand over to.
	if next, err := e.ForfeitLeadership(ctx); err != nil || next != "" {
		t.Fatalf("forfeit = %q, %v", next, err)
	}

	// The snapshot is the real etcd's: a bbolt database (its magic at
	// offset 16 of the first page's meta) and a sha256 after it.
	var snap bytes.Buffer
	if err := e.Snapshot(ctx, &snap); err != nil || snap.Len()%512 != sha256.Size {
		t.Fatalf("snapshot: %d bytes, %v", snap.Len(), err)
	}

	if err := e.Defragment(ctx); err != nil {
		t.Fatalf("defragment: %v", err)
	}
}

func TestPinnedKubeVersions(t *testing.T) {
	t.Parallel()

	k8s, etcd, err := pinnedKubeVersions(filepath.Join("..", "..", "..", "tools", "kube", "go.mod"))
	if err != nil || k8s == "" || etcd == "" || k8s[0] != 'v' || etcd[0] != 'v' {
		t.Fatalf("pinned = %q %q, %v", k8s, etcd, err)
	}

	if _, _, err := pinnedKubeVersions(filepath.Join("..", "..", "..", "go.mod")); err == nil {
		t.Fatal("the repository's go.mod pins no kube-apiserver: want an error")
	}
}
