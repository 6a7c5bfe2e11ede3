package talosapi

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// silentNode accepts TCP connections and never sends a byte (a node whose
// network stack answers but whose apid does not, or a port that queues
// connections it never serves). count says how many connections were made
// to it so far.
func silentNode(t *testing.T) (addr string, count func() int) {
	t.Helper()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { lis.Close() }) //nolint:errcheck

	// the peers' addresses, in the order the kernel queued them
	peers := make(chan string, 64)

	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}

			t.Cleanup(func() { c.Close() }) //nolint:errcheck
			peers <- c.RemoteAddr().String()
		}
	}()

	addr = lis.Addr().String()
	seen := 0

	// A connection of its own, made now, is accepted after every earlier
	// one: counting up to it needs no clock.
	return addr, func() int {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() //nolint:errcheck

		for p := range peers {
			if p == c.LocalAddr().String() {
				return seen
			}

			seen++
		}

		return seen
	}
}

// machinesOff says every machine is stopped and counts the questions.
type machinesOff struct{ asked atomic.Int32 }

func (m *machinesOff) Down(_ context.Context, node string) error {
	m.asked.Add(1)

	return &MachineDownError{Node: node, Machine: "VM 104 on Proxmox node pve2", State: "stopped"}
}

// A configured node that sends nothing back to the mTLS call is not probed
// (the probe's TLS hello would only wait for nothing a second time, and a
// preview's read of the node would spend its whole time in one attempt):
// the attempt ends with why nothing answered, and the machine's state is
// asked at once.
func TestConnectConfiguredNodeThatDoesNotAnswer(t *testing.T) {
	t.Parallel()

	creds := clientCreds(t, newTestCA(t, "os"), "os:admin")

	t.Run("silent", func(t *testing.T) {
		t.Parallel()

		addr, count := silentNode(t)
		ctx, o := firstAttemptOnly(t, fastOptions())

		_, err := Connect(ctx, Target{Node: addr, Creds: creds, Configured: true}, o)

		// The mTLS call's connection and no probe's (1; a machine too
		// loaded to dial within the attempt would make it 0).
		if got := count(); got > 1 {
			t.Errorf("the silent node got %d connections in the first attempt, want 1 (the mTLS call's; no probe)", got)
		}

		for _, want := range []string{addr, "no answer within", "the node is off, still booting, or not reachable from here"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v does not say %q", err, want)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		t.Parallel()

		addr := closedAddr(t)
		ctx, o := firstAttemptOnly(t, fastOptions())

		_, err := Connect(ctx, Target{Node: addr, Creds: creds, Configured: true}, o)
		if err == nil || !strings.Contains(err.Error(), "TLS connection to "+addr+": dial tcp "+addr+": connect: connection refused") {
			t.Errorf("error %v does not say that the connection was refused", err)
		}
	})

	t.Run("machine off", func(t *testing.T) {
		t.Parallel()

		addr, _ := silentNode(t)
		o := fastOptions()
		m := &machinesOff{}
		o.Machines = m

		_, err := Connect(context.Background(), Target{Node: addr, Creds: creds, Configured: true}, o)

		var md *MachineDownError
		if !errors.As(err, &md) || !strings.Contains(err.Error(), "VM 104 on Proxmox node pve2, is stopped") {
			t.Errorf("err = %v, want the machine's state", err)
		}

		if got := m.asked.Load(); got != 1 {
			t.Errorf("the machine's state was asked %d times, want once (after the first attempt)", got)
		}
	})
}
