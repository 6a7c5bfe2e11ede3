package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Issue 10 case 7: with one Proxmox node powered off, the preview does not
// wait for it: it warns, naming the node and each VM on it, shows those
// nodes as unknown (not unchanged, not "no node changes"), and an update
// refuses to change anything until the node is back.
func TestClusterPreviewWithAHostOffline(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "cluster", l.program(3, 2).render(t))
	p.ConfigureLab(t, l.conn)
	tcTimed(t, "create 3+2", func() harness.Result { return p.Up(t) })

	var onHost []string
	for name, vm := range l.vmsByName() {
		if vm.Node == "pve2" {
			onHost = append(onHost, name)
		}
	}
	if len(onHost) == 0 {
		t.Fatal("no node on pve2")
	}
	// Down for longer than a CLI run may take (harness.CommandTimeout): a
	// preview that waited for the node would fail instead of warning.
	if err := l.PVE.RestartNode("pve2", 30*time.Minute); err != nil {
		t.Fatal(err)
	}

	pre := p.Preview(t)
	t.Logf("preview with pve2 offline:\n%s", pre.Output())
	if pre.ExitCode != 0 {
		t.Fatalf("preview with pve2 offline failed:\n%s", pre)
	}
	vms := l.vmsByName()
	for _, name := range onHost {
		want := fmt.Sprintf("%s: VM %d on pve2 is unknown (pve2 is offline): not checked", name, vms[name].VMID)
		if !strings.Contains(pre.Output(), want) {
			t.Errorf("the preview does not warn %q", want)
		}
	}
	if !strings.Contains(pre.Output(), fmt.Sprintf("%d unknown (Proxmox node offline, not checked)", len(onHost))) || strings.Contains(pre.Output(), "no node changes") {
		t.Errorf("the preview's summary does not show the nodes as unknown")
	}

	up := p.Up(t)
	if up.ExitCode == 0 || !strings.Contains(up.Output(), "Proxmox node pve2 is offline") || !strings.Contains(up.Output(), "nothing was changed") {
		t.Errorf("up with pve2 offline: exit %d\n%s", up.ExitCode, up.Output())
	}
}
