package lab

import (
	"context"
	"fmt"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// A Proxmox host that loses power while a Talos VM on it installs an
// upgrade: as on real hardware the install never finished, so the node
// boots the installed (old) version and runs normally (Talos keeps the
// previous and the new boot entry, A/B, and only switches once the install
// is complete: Talos docs "Upgrades", A-B image scheme; the lab writes the
// new image only at the end of upgrade(), machined_lifecycle.go). The host
// starts its onboot VMs when it is back (pve-manager startall); a start that
// fails leaves the VM stopped and nothing answers at the node's address. No
// path leaves the node answering in stage "upgrading" without progress:
// the 10-minute wait of issue 10 was a stopped VM (its onboot start failed)
// whose last answer the provider's progress kept repeating.
func TestHostPowerLossDuringTalosUpgrade(t *testing.T) {
	t.Parallel()

	for _, startFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("start fails %v", startFails), func(t *testing.T) {
			t.Parallel()
			hostPowerLossDuringUpgrade(t, startFails)
		})
	}
}

func hostPowerLossDuringUpgrade(t *testing.T, startFails bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Slow enough that the install takes a while (25 s scaled to 0.5 s).
	l, err := Start(ctx, Options{TimeScale: 0.02})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { l.Close() }) //nolint:errcheck

	_, _, addr := startTalosVM(t, ctx, l, proxmox.VirtualMachineOption{Name: "onboot", Value: "1"})

	secure := installControlPlane(t, ctx, addr)

	var n *talos.Node
	eventually(t, "simulated node running", func() bool {
		n = l.Talos().Node(addr)
		return n != nil && n.Status().Phase == talos.PhaseRunning
	})

	// Force: no etcd is bootstrapped on this single node.
	next := "factory.talos.dev/nocloud-installer/" + qgaSchematic + ":v1.12.6"
	if _, err := secure.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: next, Force: true}); err != nil {
		t.Fatal(err)
	}

	eventually(t, "stage upgrading", func() bool { return n.Status().Phase == talos.PhaseUpgrading })

	if startFails {
		l.SetFaults(pve.Faults{Script: []pve.FaultRule{{Task: "qmstart"}}})
	}

	if err := l.PVE.RestartNode("pve1", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}

	<-n.Done()
	eventually(t, "pve1 back", func() bool { return l.PVE.NodeOnline("pve1") })

	if startFails {
		eventually(t, "the onboot start to fail", func() bool { return len(l.PVE.FaultStrikes()) == 1 })

		if err := l.PVE.WaitTasks(ctx); err != nil {
			t.Fatal(err)
		}

		for _, v := range l.VMs() {
			if v.VMID == 100 && v.Status != "stopped" {
				t.Fatalf("VM 100 after its onboot start failed: %+v, want stopped", v)
			}
		}

		if m := l.Talos().Node(addr); m != nil {
			t.Fatalf("a node answers at %s although its VM is stopped: %+v", addr, m.Status())
		}

		return
	}

	eventually(t, "the node back, running", func() bool {
		m := l.Talos().Node(addr)
		return m != nil && m != n && m.Status().Phase == talos.PhaseRunning
	})

	if st := l.Talos().Node(addr).Status(); st.Image.Version != "v1.12.5" || !st.Configured {
		t.Fatalf("node after the power loss during its upgrade: %+v, want Talos v1.12.5 configured and running", st)
	}

	// apid starts a moment after the node runs its configuration.
	var tag string
	eventually(t, "the Talos API back", func() bool {
		v, err := secure.Version(ctx)
		if err == nil {
			tag = v.Messages[0].GetVersion().GetTag()
		}

		return err == nil
	})

	if tag != "v1.12.5" {
		t.Fatalf("Version after the power loss = %s, want v1.12.5", tag)
	}
}
