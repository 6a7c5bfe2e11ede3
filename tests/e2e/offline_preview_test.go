package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/golden"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// Issue 13: the offline preview (PROXMOXTALOS_OFFLINE_PREVIEW=true) of
// pull requests against a cluster that exists, on a CI runner that cannot
// reach Proxmox or the nodes:
//   - it contacts neither: the lab counts every Proxmox request, and every
//     Talos API call fails while it runs (a node read would warn);
//   - it shows the same changes as the online preview, plus one warning per
//     skipped check (golden files, testdata/offline-preview);
//   - no spurious diff offline either;
//   - `pulumi up` with it is refused, naming the setting, and changes
//     nothing: no Proxmox request, the same pending changes after.
func TestOfflinePreview(t *testing.T) {
	t.Parallel()

	l := startTCLab(t)
	env := harness.NewEnv(t)

	base := goldenCluster{
		Subnet: l.AddressBlock().String(), Gateway: l.addr(1), Start: l.addr(10), End: l.addr(40), VIP: l.addr(5),
		FactoryURL: l.FactoryURL(), TalosVersion: "v1.12.5", KubernetesVersion: "v1.35.1",
		ControlPlanes: 1, Workers: 1, WorkerCores: 2, MaxPods: "110", Mirrors: "{}",
		ProxyPassword: "offline-proxy-password", RegistryPassword: "offline-registry-password",
	}
	p := harness.NewYAMLProject(t, env, "demo", base.render(t))
	p.ConfigureLab(t, l.conn)
	p.SetConfig(t, "ccmToken", "offline-ccm-token", true)
	if r := p.Up(t); r.ExitCode != 0 {
		t.Fatalf("up: %s", r)
	}

	offline := map[string]string{"PROXMOXTALOS_OFFLINE_PREVIEW": "true"}
	// isolated runs a command offline and checks that it reached neither
	// Proxmox nor a node.
	isolated := func(what string, args ...string) harness.Result {
		t.Helper()
		before := l.PVE.Stats().Requests
		l.Talos().SetFaults(talos.Faults{APIErrorRate: 1})
		defer l.Talos().SetFaults(talos.Faults{})
		r := p.RunWith(t, offline, args...)
		if n := l.PVE.Stats().Requests - before; n != 0 {
			t.Errorf("%s made %d Proxmox requests", what, n)
		}
		if strings.Contains(r.Output(), "did not say what it runs") {
			t.Errorf("%s asked the nodes:\n%s", what, r.Output())
		}
		return r
	}

	if r := isolated("offline preview of the program as it is", "preview", "--expect-no-changes", "--diff"); r.ExitCode != 0 {
		t.Errorf("an offline preview without changes: %s", r)
	}

	norm := previewNormalizer(l)
	for _, pr := range []struct {
		name   string
		change func(*goldenCluster)
	}{
		{"add-a-worker", func(g *goldenCluster) { g.Workers = 2 }},
		{"change-a-kubelet-argument", func(g *goldenCluster) { g.MaxPods = "150" }},
	} {
		g := base
		pr.change(&g)
		p.WriteProgram(t, "demo", g.render(t))

		online := p.Preview(t, "--diff")
		r := isolated(pr.name, "preview", "--diff")
		if online.ExitCode != 0 || r.ExitCode != 0 {
			t.Fatalf("%s: online %s\noffline %s", pr.name, online, r)
		}
		// The same plan: every step and property as the online preview.
		if on, off := steps(online.Stdout), steps(r.Stdout); on != off {
			t.Errorf("%s: the offline preview differs from the online one:\n--- online\n%s\n--- offline\n%s", pr.name, on, off)
		}
		stderr := sortedLines(vmWarnings.ReplaceAllString(r.Stderr, "VM <vmid> on node ${1}"))
		text := norm.Normalize(vmIDs.ReplaceAllString(golden.SortSteps(r.Stdout), "${1}/<vmid>") + "\n--- stderr ---\n" + stderr)
		golden.Check(t, filepath.Join("testdata", "offline-preview", pr.name+".txt"), text)
	}

	// up is refused before anything changes; the changes stay pending.
	pending := steps(p.Preview(t, "--diff").Stdout)
	r := isolated("offline up", "up", "--yes", "--skip-preview")
	if r.ExitCode == 0 || !strings.Contains(r.Output(), "proxmoxtalos:offlinePreview") ||
		!strings.Contains(r.Output(), "PROXMOXTALOS_OFFLINE_PREVIEW") || !strings.Contains(r.Output(), "nothing was changed") {
		t.Errorf("an offline up is not refused with the setting named: %s", r)
	}
	if after := steps(p.Preview(t, "--diff").Stdout); after != pending {
		t.Errorf("the refused up changed the stack: pending before\n%s\nafter\n%s", pending, after)
	}
	if r := isolated("offline destroy", "destroy", "--yes", "--skip-preview"); r.ExitCode == 0 || !strings.Contains(r.Output(), "nothing was changed") {
		t.Errorf("an offline destroy is not refused: %s", r)
	}

	p.WriteProgram(t, "demo", base.render(t))
	if r := p.Destroy(t); r.ExitCode != 0 {
		t.Errorf("destroy: %s", r)
	}
}

// previewTail is what follows the steps in `pulumi preview` text output:
// the outputs, counts and duration, and (stderr) diagnostics.
var previewTail = regexp.MustCompile(`(?m)^(Outputs:|Resources:)`)

// steps is the steps of a preview's text output, sorted (parallel steps
// print in any order), without the counts and timings after them.
func steps(stdout string) string {
	if i := previewTail.FindStringIndex(stdout); i != nil {
		stdout = stdout[:i[0]]
	}
	return golden.Normalizer{}.Normalize(vmIDs.ReplaceAllString(golden.SortSteps(stdout), "${1}/<vmid>"))
}

// Stand-alone resources (no TalosCluster): each resource says what its
// offline preview skipped, once per check; the steps are the online
// preview's; nothing reaches Proxmox; up is refused.
func TestOfflinePreviewResources(t *testing.T) {
	t.Parallel()
	l := startProxmoxLab(t)
	l.makeVM(t, "pve1", templateVMID, "base-template", true)
	env := harness.NewEnv(t)
	params := vmsParams{Address: l.address(31), Template: templateVMID, Cores: 1}
	p := harness.NewYAMLProject(t, env, "vms", render(t, vmsProgram, params))
	p.ConfigureLab(t, l.conn)
	mustOK(t, "up", p.Up(t))

	offline := map[string]string{"PROXMOXTALOS_OFFLINE_PREVIEW": "true"}
	isolated := func(what string, args ...string) harness.Result {
		t.Helper()
		before := l.PVE.Stats().Requests
		r := p.RunWith(t, offline, args...)
		if n := l.PVE.Stats().Requests - before; n != 0 {
			t.Errorf("%s made %d Proxmox requests", what, n)
		}
		return r
	}
	mustOK(t, "offline preview without changes", isolated("offline preview", "preview", "--expect-no-changes"))

	params.Cores = 2
	p.WriteProgram(t, "vms", render(t, vmsProgram, params))
	online := mustOK(t, "online preview", p.Preview(t, "--diff"))
	r := mustOK(t, "offline preview", isolated("offline preview", "preview", "--diff"))
	if on, off := steps(online.Stdout), steps(r.Stdout); on != off {
		t.Errorf("the offline preview differs from the online one:\n--- online\n%s\n--- offline\n%s", on, off)
	}
	// Check runs for every resource (2 VMs, 1 file), the live state only
	// for the VMs.
	for what, n := range map[string]int{"the API token's Proxmox privileges": 3, "the inputs against the Proxmox cluster": 3,
		"the VMs' live state": 2, "the hosts' free memory": 0, "what the Talos nodes run": 0} {
		if got := strings.Count(r.Output(), "not checked: "+what); got != n {
			t.Errorf("%q said %d times, want %d (once per resource it applies to):\n%s", what, got, n, r.Output())
		}
	}

	// isolated checks that the refused up made no Proxmox request at all.
	r = isolated("offline up", "up", "--yes", "--skip-preview")
	if r.ExitCode == 0 || !strings.Contains(r.Output(), "cannot update VirtualMachine cloned") || !strings.Contains(r.Output(), "nothing was changed") {
		t.Errorf("an offline up is not refused: %s", r)
	}
	if r := isolated("offline refresh", "refresh", "--yes"); r.ExitCode == 0 || !strings.Contains(r.Output(), "PROXMOXTALOS_OFFLINE_PREVIEW") {
		t.Errorf("an offline refresh is not refused: %s", r)
	}
	mustOK(t, "destroy", p.Destroy(t))
}
