package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// tcLab is an in-process lab (time scale 0) booting simulated Talos
// nodes, with its log kept for assertions on the order of events.
type tcLab struct {
	*lab.Lab
	conn harness.Lab

	mu  sync.Mutex
	log []string
}

func startTCLab(t *testing.T) *tcLab {
	t.Helper()
	return startTCLabWith(t, lab.Options{})
}

// startTCLabWith starts the lab with opts (time scale 0, the log kept; with
// TCLAB_DEBUG_LOG=<file> also appended to that file as it happens, each line
// after its wall time, to watch a stuck or slow step).
func startTCLabWith(t *testing.T, opts lab.Options) *tcLab {
	t.Helper()
	cl := &tcLab{}
	opts.TimeScale = 0
	opts.Logf = func(format string, args ...any) {
		cl.mu.Lock()
		defer cl.mu.Unlock()
		cl.log = append(cl.log, fmt.Sprintf(format, args...))
		if f := os.Getenv("TCLAB_DEBUG_LOG"); f != "" {
			if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				fmt.Fprintf(fh, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
				fh.Close()
			}
		}
	}
	l, err := lab.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cl.Lab = l
	cl.conn = harness.LabOf(l)
	return cl
}

// addr is host n of the lab's 127.X.Y.0/24 block.
func (l *tcLab) addr(n byte) string {
	return l.Address(n).String()
}

// logLines returns the lab log lines matching re, in order.
func (l *tcLab) logLines(re *regexp.Regexp) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.log {
		if re.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

// cdroms are the ISO volumes in the nodes' VM CD drives, by node name.
func (l *tcLab) cdroms(nodes []tcNode) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		cfg, _, _ := l.VMConfig(n.VMID)
		for _, v := range cfg {
			if strings.Contains(v, "media=cdrom") && strings.Contains(v, ":iso/") {
				out[n.Name], _, _ = strings.Cut(v, ",")
			}
		}
	}
	return out
}

// restarts lists the stops, starts and Talos boots of the nodes' VMs in
// the lab log, in order ("stop e2e-workers-1", "booted e2e-workers-1"),
// from the since'th on.
func (l *tcLab) restarts(since int, nodes []tcNode) []string {
	byID := map[string]string{}
	for _, n := range nodes {
		byID[strconv.Itoa(n.VMID)] = n.Name
	}
	task := regexp.MustCompile(`:qm(stop|shutdown|start):([0-9]+):`)
	boot := regexp.MustCompile(`msg=booted vm=(\S+)`)
	var out []string
	for _, line := range l.logLines(regexp.MustCompile(`:qm(stop|shutdown|start):|msg=booted `)) {
		if m := task.FindStringSubmatch(line); m != nil && byID[m[2]] != "" {
			kind := "stop"
			if m[1] == "start" {
				kind = "start"
			}
			out = append(out, kind+" "+byID[m[2]])
		} else if m := boot.FindStringSubmatch(line); m != nil && slices.ContainsFunc(nodes, func(n tcNode) bool { return n.Name == m[1] }) {
			out = append(out, "booted "+m[1])
		}
	}
	return out[min(since, len(out)):]
}

// isoVolumes lists the ISO volumes on a host's storages.
func (l *tcLab) isoVolumes(host string) []string {
	var out []string
	for _, st := range l.Storages(host) {
		for _, v := range l.PVE.Volumes(host, st) {
			if strings.Contains(v.VolID, ":iso/") {
				out = append(out, v.VolID)
			}
		}
	}
	return out
}

// vmsByName lists the lab's VMs by name.
func (l *tcLab) vmsByName() map[string]pve.VMInfo {
	out := map[string]pve.VMInfo{}
	for _, vm := range l.VMs() {
		out[vm.Name] = vm
	}
	return out
}

// tcProgram is the YAML program of the e2e cluster; each step of a
// test changes a field and writes the program again.
type tcProgram struct {
	Subnet, Gateway, Start, End, VIP string
	FactoryURL                       string
	TalosVersion, KubernetesVersion  string
	ControlPlanes, Workers           int
	WorkerCores                      int
	DiskStorage                      string // hosts[].diskStorage, "" for the default
	DiskSize                         int    // every node's size.diskSize in GiB, 0 for the default
	WorkerLabels                     string // YAML flow map
	WorkerPatches                    string // YAML flow list
	InlineManifests                  string // YAML flow list, "" for none
	ExtraManifests                   string // YAML flow list of URLs, "" for none
}

var tcTemplate = template.Must(template.New("cluster").Parse(`resources:
  cluster:
    type: proxmoxtalos:TalosCluster
    properties:
      clusterName: e2e
      talosVersion: {{.TalosVersion}}
      kubernetesVersion: {{.KubernetesVersion}}
      image:
        factoryUrl: {{.FactoryURL}}
{{- if .DiskStorage}}
      hosts: [{ node: pve1, diskStorage: {{.DiskStorage}} }, { node: pve2, diskStorage: {{.DiskStorage}} }, { node: pve3, diskStorage: {{.DiskStorage}} }]
{{- else}}
      hosts: [{ node: pve1 }, { node: pve2 }, { node: pve3 }]
{{- end}}
      network:
        subnet: {{.Subnet}}
        gateway: {{.Gateway}}
        addressRange: { start: {{.Start}}, end: {{.End}} }
        dnsServers: [{{.Gateway}}]
      vip: {{.VIP}}
      controlPlane:
        count: {{.ControlPlanes}}
{{- if .DiskSize}}
        size: { diskSize: {{.DiskSize}} }
{{- end}}
      workerPools:
        - name: workers
          count: {{.Workers}}
          size: { cores: {{.WorkerCores}}{{if .DiskSize}}, diskSize: {{.DiskSize}}{{end}} }
          labels: {{.WorkerLabels}}
      workerPatches: {{.WorkerPatches}}
{{- if .InlineManifests}}
      inlineManifests: {{.InlineManifests}}
{{- end}}
{{- if .ExtraManifests}}
      extraManifests: {{.ExtraManifests}}
{{- end}}
outputs:
  nodes: ${cluster.nodes}
  summary: ${cluster.summary}
  endpoint: ${cluster.endpoint}
  kubeconfig: ${cluster.kubeconfig}
  talosconfig: ${cluster.talosconfig}
`))

func (l *tcLab) program(cps, workers int) tcProgram {
	return tcProgram{
		Subnet: l.AddressBlock().String(), Gateway: l.addr(1), Start: l.addr(10), End: l.addr(40), VIP: l.addr(5),
		FactoryURL:   l.FactoryURL(),
		TalosVersion: "v1.12.5", KubernetesVersion: "v1.34.1", ControlPlanes: cps, Workers: workers,
		WorkerCores: 2, WorkerLabels: "{}", WorkerPatches: "[]",
	}
}

func (c tcProgram) render(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	if err := tcTemplate.Execute(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// tcNode is one entry of the component's nodes output.
type tcNode struct {
	Name        string `json:"name"`
	Role        string `json:"role"`
	ProxmoxNode string `json:"proxmoxNode"`
	VMID        int    `json:"vmId"`
	Address     string `json:"address"`
	MAC         string `json:"macAddress"`
}

type tcOutputs struct {
	Nodes       []tcNode `json:"nodes"`
	Summary     string   `json:"summary"`
	Endpoint    string   `json:"endpoint"`
	Kubeconfig  string   `json:"kubeconfig"`
	Talosconfig string   `json:"talosconfig"`
}

func tcReadOutputs(t *testing.T, p *harness.Project) tcOutputs {
	t.Helper()
	r := p.MustRun(t, "stack", "output", "--json", "--show-secrets")
	var out tcOutputs
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("stack outputs: %v\n%s", err, r.Stdout)
	}
	return out
}

func tcVMIDs(nodes []tcNode) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		out[n.Name] = n.VMID
	}
	return out
}

// tcTimed runs a CLI step, fails the test unless it succeeds, and logs how
// long it took.
func tcTimed(t *testing.T, what string, run func() harness.Result) harness.Result {
	t.Helper()
	start := time.Now()
	r := run()
	t.Logf("%s: %s", what, time.Since(start).Round(100*time.Millisecond))
	if r.ExitCode != 0 {
		t.Fatalf("%s failed: %s", what, r)
	}
	return r
}

// bootCounts are the configured boots of each node the simulator runs.
func (l *tcLab) bootCounts(nodes []tcNode) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		if sn := l.Talos().Node(netip.MustParseAddr(n.Address)); sn != nil {
			out[n.Name] = sn.Status().Boots
		}
	}
	return out
}

func tcJoin(lines []string) string { return strings.Join(lines, "\n") }

// tcAssertSummary checks what an up did, as the component's diagnostic
// line ("cluster <name>: <did>"), and that the summary output then says
// what the cluster is (is), which the next no-op preview computes the same.
func tcAssertSummary(t *testing.T, what string, up harness.Result, out tcOutputs, cluster, did, is string) {
	t.Helper()
	if !strings.Contains(up.Output(), "cluster "+cluster+": "+did) {
		t.Errorf("%s: the up does not say %q:\n%s", what, "cluster "+cluster+": "+did, up.Output())
	}
	if out.Summary != is {
		t.Errorf("%s: summary output %q, want %q", what, out.Summary, is)
	}
}
