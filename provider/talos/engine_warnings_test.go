package talos

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginetest"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/eventctx"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// stallingAPI listens on addr's Talos API port, never answers, and calls
// onConnect at the first connection.
func stallingAPI(t *testing.T, addr string, onConnect func()) {
	t.Helper()

	l, err := net.Listen("tcp", net.JoinHostPort(addr, "50000"))
	if err != nil {
		t.Fatal(err)
	}

	var (
		once  sync.Once
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})

	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			once.Do(onConnect)
		}
	}()
}

// Review 2026-11-29, item 1: a destroy whose time runs out while it
// cleans up after a node that is gone warns about what it left undone
// (the etcd member, the Node object). Those warnings went through a
// logger of the delete's own context, done by then, and never reached
// the user. Here the node refuses, the one control plane to go through
// stalls, and the delete's deadline passes when the control plane is
// reached: every warning must still arrive.
func TestDeleteWarnsTheUserAfterItsDeadlinePassed(t *testing.T) {
	t.Parallel()

	block := simtest.AddressBlock()
	node, cp := block(5).String(), block(6).String() // node: nothing listens
	c := newSimCluster(t, block(6))

	st := ConfigurationApplyState{ConfigurationApplyArgs: ConfigurationApplyArgs{
		Node: node, ClientConfiguration: c.client,
		MachineConfiguration: c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version),
		Reset:                &ResetOnDelete{Enabled: ptrTo(true), ControlPlanes: []string{cp}},
	}}

	var err error
	logs := enginetest.Run(t, func(ctx context.Context) {
		// The deadline is near (2 s: the node is given 1 s to answer)
		// and passes when the control plane is reached.
		dl := eventctx.Within(ctx, 2*time.Second)
		stallingAPI(t, cp, dl.Pass)

		_, err = (&ConfigurationApply{opts: fastOpts}).Delete(dl, infer.DeleteRequest[ConfigurationApplyState]{ID: node, State: st})
	})
	if err != nil {
		t.Fatalf("a destroy of a node that is gone failed: %v", err)
	}

	got := enginetest.Messages(logs, pulumirpc.LogSeverity_WARNING)
	for _, want := range []string{
		"does not answer on the Talos API",           // before the deadline
		"its etcd member could not be removed",       // after it
		"remove it with talosctl etcd remove-member", // what to do
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("no warning says %q; the user was told %q", want, got)
		}
	}
}
