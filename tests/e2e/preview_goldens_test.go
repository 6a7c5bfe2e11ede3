package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/golden"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/leakscan"
)

// Issue 6 for the TalosCluster component, on one cluster (creating it is
// the expensive part):
//   - what a reviewer reads in `pulumi preview --diff` for the typical pull
//     requests, as golden files reviewed by a person
//     (tests/e2e/testdata/preview-goldens; -update rewrites them);
//   - no spurious diff: after up, after refresh, and after the previews;
//   - no secret of the stack in any of this output or in the state.

// goldenCluster is the example cluster: 3 control planes behind a VIP, a
// worker pool, the cloud controller manager (default), a kubelet argument.
type goldenCluster struct {
	Subnet, Gateway, Start, End, VIP string
	FactoryURL                       string
	TalosVersion, KubernetesVersion  string
	ControlPlanes, Workers           int
	WorkerCores                      int
	MaxPods                          string
	Mirrors                          string // YAML flow map
}

var goldenTemplate = template.Must(template.New("cluster").Parse(`resources:
  cluster:
    type: proxmoxtalos:TalosCluster
    properties:
      clusterName: demo
      talosVersion: {{.TalosVersion}}
      kubernetesVersion: {{.KubernetesVersion}}
      image:
        factoryUrl: {{.FactoryURL}}
      hosts: [{ node: pve1 }, { node: pve2 }, { node: pve3 }]
      network:
        subnet: {{.Subnet}}
        gateway: {{.Gateway}}
        addressRange: { start: {{.Start}}, end: {{.End}} }
        dnsServers: [{{.Gateway}}]
      vip: {{.VIP}}
      controlPlane:
        count: {{.ControlPlanes}}
      workerPools:
        - name: workers
          count: {{.Workers}}
          size: { cores: {{.WorkerCores}} }
          labels: { tier: web }
      patches:
        - |
          machine:
            kubelet:
              extraArgs:
                max-pods: "{{.MaxPods}}"
      registryMirrors: {{.Mirrors}}
outputs:
  summary: ${cluster.summary}
  endpoint: ${cluster.endpoint}
`))

func (g goldenCluster) render(t *testing.T) string {
	t.Helper()

	var b bytes.Buffer
	if err := goldenTemplate.Execute(&b, g); err != nil {
		t.Fatal(err)
	}

	return b.String()
}

func TestPreviewGoldensNoSpuriousDiffNoLeaks(t *testing.T) {
	t.Parallel()

	l := startTCLab(t)
	env := harness.NewEnv(t)

	base := goldenCluster{
		Subnet: l.AddressBlock().String(), Gateway: l.addr(1), Start: l.addr(10), End: l.addr(40), VIP: l.addr(5),
		FactoryURL: l.FactoryURL(), TalosVersion: "v1.12.5", KubernetesVersion: "v1.35.1",
		ControlPlanes: 3, Workers: 2, WorkerCores: 2, MaxPods: "110", Mirrors: "{}",
	}

	p := harness.NewYAMLProject(t, env, "demo", base.render(t))
	p.ConfigureLab(t, l.conn)

	var outputs []scanned

	step := func(what string, run func() harness.Result) harness.Result {
		t.Helper()

		r := tcTimed(t, what, run)
		outputs = append(outputs, scanned{what + " stdout", r.Stdout}, scanned{what + " stderr", r.Stderr})

		return r
	}

	step("up", func() harness.Result { return p.Up(t) })

	// No spurious diff: after up, after refresh.
	// Outputs (the summary) must not change either.
	noOutputChanges(t, "after up", step("preview after up", func() harness.Result { return p.Preview(t, "--expect-no-changes", "--diff") }))
	step("refresh", func() harness.Result { return p.Refresh(t, "--expect-no-changes") })
	noOutputChanges(t, "after refresh", step("preview after refresh", func() harness.Result { return p.Preview(t, "--expect-no-changes", "--diff") }))

	block := l.AddressBlock().Addr().As4()
	norm := golden.Normalizer{Literal: map[string]string{
		fmt.Sprintf("%d.%d.%d.", block[0], block[1], block[2]): "192.0.2.",
		l.AddressBlock().String():                              "192.0.2.0/24",
		l.FactoryURL():                                         "http://factory.lab",
		strings.TrimPrefix(l.FactoryURL(), "http://"):          "factory.lab",
		// The schematic with the guest agent: stable, kept readable.
		nodesQGA: "<schematic:qemu-guest-agent>",
	}}

	for _, pr := range []struct {
		name   string
		change func(*goldenCluster)
	}{
		{"add-a-worker", func(g *goldenCluster) { g.Workers = 3 }},
		{"raise-worker-cores", func(g *goldenCluster) { g.WorkerCores = 4 }},
		{"change-a-kubelet-argument", func(g *goldenCluster) { g.MaxPods = "150" }},
		{"add-a-registry-mirror", func(g *goldenCluster) { g.Mirrors = "{ docker.io: { endpoints: [ \"https://mirror.example.com\" ] } }" }},
		{"bump-talos", func(g *goldenCluster) { g.TalosVersion = "v1.12.6" }},
		{"bump-kubernetes", func(g *goldenCluster) { g.KubernetesVersion = "v1.35.2" }},
		{"change-the-vip", func(g *goldenCluster) { g.VIP = l.addr(6) }},
		{"remove-control-planes", func(g *goldenCluster) { g.ControlPlanes = 1 }},
	} {
		g := base
		pr.change(&g)
		p.WriteProgram(t, "demo", g.render(t))

		r := step(pr.name, func() harness.Result { return p.Preview(t, "--diff") })
		step(pr.name+" --json", func() harness.Result { return p.Preview(t, "--json") })

		text := norm.Normalize(vmIDs.ReplaceAllString(golden.SortSteps(r.Stdout)+"\n--- stderr ---\n"+r.Stderr, "${1}/<vmid>"))

		golden.Check(t, filepath.Join("testdata", "preview-goldens", pr.name+".txt"), text)
	}

	// The previews changed nothing.
	p.WriteProgram(t, "demo", base.render(t))
	noOutputChanges(t, "of the base program", step("preview of the base program", func() harness.Result { return p.Preview(t, "--expect-no-changes", "--diff") }))

	// Every secret the component's stack holds, nowhere in plain text.
	set, err := leakscan.FromExport([]byte(p.MustRun(t, "stack", "export", "--show-secrets").Stdout))
	if err != nil {
		t.Fatal(err)
	}

	outputs = append(outputs, scanned{"stack export", p.StackExport(t)})

	if dir := os.Getenv("LEAKSCAN_DUMP"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "goldens-export.json"), []byte(outputs[len(outputs)-1].text), 0o600)
	}

	step("destroy", func() harness.Result { return p.Destroy(t) })

	if len(set.Secrets) < 20 {
		t.Errorf("only %d secret values collected from the component's state", len(set.Secrets))
	}

	needles := set.Needles()
	for _, o := range outputs {
		for _, f := range leakscan.Scan(o.name, o.text, needles) {
			t.Errorf("leak: %s", f)
		}
	}
}

// vmIDs are "pve2/104" in resource IDs: VMIDs are allocated in the order
// parallel creates reach Proxmox, which varies between runs.
var vmIDs = regexp.MustCompile(`\b(pve[0-9]+)/[0-9]{3,}\b`)

// outputChange is a changed output in `pulumi preview --diff`: the
// component's ("--outputs:--" then "~ summary: a => b") or the stack's.
var outputChange = regexp.MustCompile(`(?m)^\s*--outputs:--$|^\s*[~+-] \w+: .* => `)

// noOutputChanges fails when a no-op `pulumi preview --diff` shows an
// output change: --expect-no-changes looks at resources only, and
// `--json` lists no outputs of a preview's new state.
func noOutputChanges(t *testing.T, when string, r harness.Result) {
	t.Helper()
	if m := outputChange.FindString(r.Stdout); m != "" {
		t.Errorf("preview %s shows an output change (%q):\n%s", when, strings.TrimSpace(m), r.Stdout)
	}
}
