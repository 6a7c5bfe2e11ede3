package e2e

import (
	"context"
	"encoding/base64"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// The TalosCluster component through its whole life, with the real CLI in a
// Pulumi YAML project against the lab: create 3 control planes + 2 workers
// with the CCM and a VIP, a second preview tcWithout changes, configuration
// changes with and tcWithout reboots, a Talos upgrade node by node, scaling
// workers 2->3->2 and control planes 3->1, and destroy. All of it with the
// least-privilege token of the README's "Proxmox privileges" recipe, not an
// administrator's.
func TestClusterLifecycle(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	l.useRecipeToken(t, readmeRecipe(t))
	env := harness.NewEnv(t)
	prog := l.program(3, 2)
	p := harness.NewYAMLProject(t, env, "cluster", prog.render(t))
	p.ConfigureLab(t, l.conn)

	// Create.
	up := tcTimed(t, "create 3+2", func() harness.Result { return p.Up(t) })
	out := tcReadOutputs(t, p)
	tcAssertSummary(t, "create", up, out, "e2e", "5 added: e2e-cp-1, e2e-cp-2, e2e-cp-3, +2 more; new cluster: all nodes configured at once, etcd bootstrapped on e2e-cp-1, one health check at the end", "5 nodes (3 control planes, 2 workers), Talos v1.12.5, Kubernetes v1.34.1")
	if out.Endpoint != "https://"+l.addr(5)+":6443" {
		t.Errorf("endpoint %s, want the VIP", out.Endpoint)
	}
	vms := l.vmsByName()
	for _, n := range out.Nodes {
		vm, ok := vms[n.Name]
		if !ok || vm.VMID != n.VMID || vm.Node != n.ProxmoxNode || vm.Status != "running" {
			t.Errorf("node %+v: lab VM %+v", n, vm)
		}
	}
	hosts := map[string]bool{}
	for _, n := range out.Nodes[:3] {
		hosts[n.ProxmoxNode] = true
	}
	if len(hosts) != 3 {
		t.Errorf("control planes share hosts: %+v", out.Nodes[:3])
	}
	knodes, err := kube.Nodes([]byte(out.Kubeconfig), "")
	if err != nil {
		t.Fatalf("Kubernetes API on the VIP: %v", err)
	}
	if len(knodes) != 5 {
		t.Errorf("Kubernetes nodes %+v", knodes)
	}
	for _, n := range knodes {
		if !n.Ready || !strings.HasPrefix(n.ProviderID, "talos://") {
			t.Errorf("Kubernetes node %s ready=%v providerID=%q: want Ready with a providerID from the CCM", n.Name, n.Ready, n.ProviderID)
		}
	}
	for _, secret := range []string{out.Kubeconfig, out.Talosconfig} {
		if key := tcKeyLine(secret); key != "" && strings.Contains(up.Output(), key) {
			t.Errorf("a private key of the outputs appears in the up output")
		}
	}
	ids := tcVMIDs(out.Nodes)
	// the VMs were made by the recipe's token (the UPIDs carry it)
	if mine, admin := l.logLines(regexp.MustCompile(`:qm(create|clone):[0-9]+:pulumi@pve!ci:`)),
		l.logLines(regexp.MustCompile(`:qm(create|clone):[0-9]+:root@pam!lab:`)); len(mine) == 0 || len(admin) > 0 {
		t.Errorf("VM creation tasks by the recipe's token: %d, by the admin token: %d", len(mine), len(admin))
	}

	// A second preview shows nothing to do, also after a refresh.
	tcTimed(t, "second preview", func() harness.Result { return p.Preview(t, "--expect-no-changes") })
	tcTimed(t, "refresh", func() harness.Result { return p.Refresh(t) })
	tcTimed(t, "preview after refresh", func() harness.Result { return p.Preview(t, "--expect-no-changes") })

	// A label change applies tcWithout a reboot.
	boots := l.bootCounts(out.Nodes)
	prog.WorkerLabels = "{ tier: web }"
	p.WriteProgram(t, "cluster", prog.render(t))
	pre := tcTimed(t, "label change preview", func() harness.Result { return p.Preview(t) })
	if !strings.Contains(pre.Output(), "cluster e2e: 2 updated live, no reboot: e2e-workers-1, e2e-workers-2") {
		t.Errorf("label change preview lacks the summary:\n%s", pre.Output())
	}
	up = tcTimed(t, "label change", func() harness.Result { return p.Up(t) })
	tcAssertSummary(t, "label change", up, tcReadOutputs(t, p), "e2e", "2 updated live, no reboot: e2e-workers-1, e2e-workers-2", "5 nodes (3 control planes, 2 workers), Talos v1.12.5, Kubernetes v1.34.1")
	if got := l.bootCounts(out.Nodes); !maps.Equal(got, boots) {
		t.Errorf("a label change rebooted nodes: boots %v -> %v", boots, got)
	}
	knodes, _ = kube.Nodes([]byte(out.Kubeconfig), "")
	for _, n := range knodes {
		if strings.Contains(n.Name, "workers") && n.Labels["tier"] != "web" {
			t.Errorf("worker %s labels %v", n.Name, n.Labels)
		}
	}

	// An environment change needs a reboot: only the workers reboot.
	prog.WorkerPatches = `["machine:\n  env:\n    HTTP_PROXY: http://proxy.internal:3128\n"]`
	p.WriteProgram(t, "cluster", prog.render(t))
	up = tcTimed(t, "reboot-needing change", func() harness.Result { return p.Up(t) })
	tcAssertSummary(t, "reboot-needing change", up, tcReadOutputs(t, p), "e2e", "2 rebooted one at a time (machine.env): e2e-workers-1, e2e-workers-2", "5 nodes (3 control planes, 2 workers), Talos v1.12.5, Kubernetes v1.34.1")
	got := l.bootCounts(out.Nodes)
	for name, before := range boots {
		want := before
		if strings.Contains(name, "workers") {
			want++
		}
		if got[name] != want {
			t.Errorf("%s booted %d times, want %d (boots before %v, after %v)", name, got[name], want, boots, got)
		}
	}

	// More cores: each worker's VM restarts, the next one only once the
	// cluster is healthy with the first again.
	prog.WorkerCores = 3
	p.WriteProgram(t, "cluster", prog.render(t))
	seen := len(l.restarts(0, out.Nodes[3:]))
	cores := tcTimed(t, "more cores", func() harness.Result { return p.Up(t) })
	tcAssertSummary(t, "more cores", cores, tcReadOutputs(t, p), "e2e", "2 rebooted one at a time (cores 2 → 3): e2e-workers-1, e2e-workers-2", "5 nodes (3 control planes, 2 workers), Talos v1.12.5, Kubernetes v1.34.1")
	for _, n := range out.Nodes[3:] {
		if !strings.Contains(cores.Output(), "node "+n.Name+" ("+n.Address+"): cluster healthy after the change") {
			t.Errorf("%s's VM restart was not followed by a health check:\n%s", n.Name, cores.Output())
		}
	}
	if order := l.restarts(seen, out.Nodes[3:]); !slices.Equal(order, []string{"stop " + out.Nodes[3].Name, "start " + out.Nodes[3].Name, "booted " + out.Nodes[3].Name,
		"stop " + out.Nodes[4].Name, "start " + out.Nodes[4].Name, "booted " + out.Nodes[4].Name}) {
		t.Errorf("VM restarts:\n%s\nwant one worker at a time, the second after the first booted", tcJoin(order))
	}

	// Talos upgrade: one node at a time, control planes first, same VMs.
	prog.TalosVersion = "v1.12.6"
	p.WriteProgram(t, "cluster", prog.render(t))
	pre = tcTimed(t, "upgrade preview", func() harness.Result { return p.Preview(t) })
	if !strings.Contains(pre.Output(), "all 5 nodes upgraded one at a time, control planes first (Talos v1.12.5 → v1.12.6; VMs kept)") {
		t.Errorf("upgrade preview lacks the summary:\n%s", pre.Output())
	}
	isos := l.cdroms(out.Nodes)
	upgrade := tcTimed(t, "Talos upgrade", func() harness.Result { return p.Up(t) })
	// Each node's change waited for the nodes before it, and for itself
	// after (control planes first: the first one has none before it).
	for i, n := range out.Nodes {
		label := n.Name + " (" + n.Address + ")"
		if !strings.Contains(upgrade.Output(), "node "+label+": cluster healthy after the change") ||
			(i > 0) != strings.Contains(upgrade.Output(), "node "+label+": cluster healthy before the change") {
			t.Errorf("the upgrade of %s was not gated on cluster health before and after:\n%s", n.Name, upgrade.Output())
		}
	}
	// The VMs keep the ISO they booted from: no new download replaced it.
	if got := l.cdroms(out.Nodes); !maps.Equal(got, isos) {
		t.Errorf("the upgrade changed the VMs' ISOs: %v -> %v", isos, got)
	}
	events := l.logLines(regexp.MustCompile(`upgrade (request received|successful)`))
	var order []string
	for _, e := range events {
		vm := regexp.MustCompile(`vm=(\S+)`).FindStringSubmatch(e)
		if vm == nil {
			continue
		}
		kind := "start"
		if strings.Contains(e, "successful") {
			kind = "done"
		}
		order = append(order, kind+" "+vm[1])
	}
	var want []string
	for _, n := range []string{"e2e-cp-1", "e2e-cp-2", "e2e-cp-3", "e2e-workers-1", "e2e-workers-2"} {
		want = append(want, "start "+n, "done "+n)
	}
	if !slices.Equal(order, want) {
		t.Errorf("upgrade order:\n%s\nwant one node at a time, control planes first:\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	out = tcReadOutputs(t, p)
	if !maps.Equal(tcVMIDs(out.Nodes), ids) {
		t.Errorf("VMIDs changed in the upgrade: %v -> %v", ids, tcVMIDs(out.Nodes))
	}
	for _, n := range out.Nodes {
		if v := l.Talos().Node(netip.MustParseAddr(n.Address)).Status().Image.Version; v != "v1.12.6" {
			t.Errorf("%s runs %s after the upgrade", n.Name, v)
		}
	}
	tcTimed(t, "preview after upgrade", func() harness.Result { return p.Preview(t, "--expect-no-changes") })

	// Kubernetes upgrade, one minor version: new component and kubelet
	// images, node by node in the same order, without reboots or new VMs.
	boots = l.bootCounts(out.Nodes)
	prog.KubernetesVersion = "v1.35.2"
	p.WriteProgram(t, "cluster", prog.render(t))
	k8s := tcTimed(t, "Kubernetes upgrade", func() harness.Result { return p.Up(t) })
	if !strings.Contains(k8s.Output(), "Kubernetes v1.34.1 → v1.35.2, control plane components first, then kubelets node by node") {
		t.Errorf("the update does not announce the Kubernetes upgrade:\n%s", k8s.Output())
	}
	knodes, err = kube.Nodes([]byte(out.Kubeconfig), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range knodes {
		if n.Version != "v1.35.2" {
			t.Errorf("node %s runs kubelet %s after the Kubernetes upgrade", n.Name, n.Version)
		}
	}
	if got := l.bootCounts(out.Nodes); !maps.Equal(got, boots) {
		t.Errorf("the Kubernetes upgrade rebooted nodes: %v -> %v", boots, got)
	}
	// Two phases: every kube-apiserver moved before any kubelet, so no
	// kubelet ever ran a newer minor than an API server it talks to.
	if v := l.Talos().SkewViolations(); len(v) > 0 {
		t.Errorf("the Kubernetes upgrade broke the version skew policy %d times, first: %s", len(v), v[0])
	}
	for _, n := range []string{"e2e-cp-1", "e2e-cp-2", "e2e-cp-3"} {
		if !strings.Contains(k8s.Output(), "node "+n+" ") || !strings.Contains(k8s.Output(), "control plane components v1.34.1 → v1.35.2") {
			t.Errorf("the Kubernetes upgrade does not show %s's control plane components moving first:\n%s", n, k8s.Output())
		}
	}
	if !maps.Equal(tcVMIDs(tcReadOutputs(t, p).Nodes), ids) {
		t.Errorf("VMIDs changed in the Kubernetes upgrade")
	}
	tcTimed(t, "preview after the Kubernetes upgrade", func() harness.Result { return p.Preview(t, "--expect-no-changes") })

	// Scale workers 2 -> 3 -> 2.
	prog.Workers = 3
	p.WriteProgram(t, "cluster", prog.render(t))
	up = tcTimed(t, "scale workers to 3", func() harness.Result { return p.Up(t) })
	out = tcReadOutputs(t, p)
	tcAssertSummary(t, "scale workers to 3", up, out, "e2e", "1 added: e2e-workers-3", "6 nodes (3 control planes, 3 workers), Talos v1.12.6, Kubernetes v1.35.2")
	if len(out.Nodes) != 6 || len(l.VMs()) != 6 {
		t.Errorf("after scale-out: %d nodes, %d VMs", len(out.Nodes), len(l.VMs()))
	}
	third := out.Nodes[5]
	if third.Address != l.addr(15) {
		t.Errorf("new worker got %s, want the next free address %s", third.Address, l.addr(15))
	}
	// The new worker boots the new version's ISO, downloaded next to the
	// one the other nodes still boot from.
	newISO := "local:iso/talos-v1.12.6-ce4c980550dd-nocloud-amd64.iso"
	if got := l.cdroms(out.Nodes)[third.Name]; got != newISO {
		t.Errorf("new worker boots %q, want %q", got, newISO)
	}
	oldISO := "local:iso/talos-v1.12.5-ce4c980550dd-nocloud-amd64.iso"
	if vols := l.isoVolumes(third.ProxmoxNode); !slices.Contains(vols, newISO) || !slices.Contains(vols, oldISO) {
		t.Errorf("ISOs on %s: %v", third.ProxmoxNode, vols)
	}
	if !maps.Equal(tcWithout(tcVMIDs(out.Nodes), "e2e-workers-3"), ids) {
		t.Errorf("scale-out touched existing VMs: %v", tcVMIDs(out.Nodes))
	}
	prog.Workers = 2
	p.WriteProgram(t, "cluster", prog.render(t))
	in := tcTimed(t, "scale workers to 2", func() harness.Result { return p.Up(t) })
	if _, left := l.vmsByName()["e2e-workers-3"]; left || len(l.VMs()) != 5 {
		t.Errorf("after scale-in the lab holds %v", l.vmsByName())
	}
	// Its ISO went with it; the one the other nodes boot from stays.
	for _, host := range l.Nodes() {
		if vols := l.isoVolumes(host); slices.Contains(vols, newISO) {
			t.Errorf("the new version's ISO stays on %s with no VM booting from it: %v", host, vols)
		}
	}
	if got := l.cdroms(out.Nodes[:5]); !maps.Equal(got, isos) {
		t.Errorf("ISOs after scale-in: %v, want %v", got, isos)
	}
	// The graceful reset cordoned the worker (seen in the Node object just
	// before it was deleted), and the object is gone.
	if !strings.Contains(in.Output(), "its Kubernetes Node object e2e-workers-3 (cordoned, NotReady) was deleted through control plane "+l.addr(10)) {
		t.Errorf("scale-in does not report the cordoned worker's Node object deleted:\n%s", in.Output())
	}
	tcAssertKubeNodes(t, out.Kubeconfig, "e2e-cp-1", "e2e-cp-2", "e2e-cp-3", "e2e-workers-1", "e2e-workers-2")

	// Control planes 3 -> 1: the others leave etcd, one at a time.
	prog.ControlPlanes = 1
	p.WriteProgram(t, "cluster", prog.render(t))
	down := tcTimed(t, "control planes 3 -> 1", func() harness.Result { return p.Up(t) })
	out = tcReadOutputs(t, p)
	for _, n := range []string{"e2e-cp-2", "e2e-cp-3"} {
		if !strings.Contains(down.Output(), "its Kubernetes Node object "+n+" (cordoned, NotReady) was deleted") {
			t.Errorf("3 -> 1 does not report %s's Node object deleted:\n%s", n, down.Output())
		}
	}
	tcAssertKubeNodes(t, out.Kubeconfig, "e2e-cp-1", "e2e-workers-1", "e2e-workers-2")
	tcAssertSummary(t, "control planes 3 -> 1", down, out, "e2e", "2 removed one at a time (etcd leave first): e2e-cp-2, e2e-cp-3", "3 nodes (1 control plane, 2 workers), Talos v1.12.6, Kubernetes v1.35.2")
	cp1 := l.Talos().Node(netip.MustParseAddr(l.addr(10)))
	if st := cp1.Status(); !st.EtcdMember || st.Hostname != "e2e-cp-1" {
		t.Errorf("e2e-cp-1 status %+v", st)
	}
	for _, a := range []string{l.addr(11), l.addr(12)} {
		if n := l.Talos().Node(netip.MustParseAddr(a)); n != nil {
			t.Errorf("removed control plane %s still runs: %+v", a, n.Status())
		}
	}
	leaves := l.logLines(regexp.MustCompile(`left the etcd cluster`))
	if len(leaves) != 2 || !strings.Contains(leaves[0], "e2e-cp-3") || !strings.Contains(leaves[1], "e2e-cp-2") {
		t.Errorf("etcd leaves:\n%s\nwant e2e-cp-3, then e2e-cp-2", tcJoin(leaves))
	}
	creds := tcCredentials(t, out.Talosconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep := talosapi.CheckHealth(ctx, talosapi.HealthRequest{
		ControlPlanes: []string{l.addr(10)}, Workers: []string{l.addr(13), l.addr(14)}, Creds: creds,
		Kubeconfig: []byte(out.Kubeconfig),
	}, talosapi.Options{})
	if len(rep.Problems) > 0 {
		t.Errorf("cluster after 3 -> 1 is not healthy: %v", rep.Problems)
	}
	tcTimed(t, "preview after 3 -> 1", func() harness.Result { return p.Preview(t, "--expect-no-changes") })

	// And back to 3: the new control planes join etcd one at a time.
	prog.ControlPlanes = 3
	p.WriteProgram(t, "cluster", prog.render(t))
	up = tcTimed(t, "control planes 1 -> 3", func() harness.Result { return p.Up(t) })
	out = tcReadOutputs(t, p)
	tcAssertSummary(t, "control planes 1 -> 3", up, out, "e2e", "2 added: e2e-cp-2, e2e-cp-3", "5 nodes (3 control planes, 2 workers), Talos v1.12.6, Kubernetes v1.35.2")
	for _, a := range []string{l.addr(10), l.addr(11), l.addr(12)} {
		if n := l.Talos().Node(netip.MustParseAddr(a)); n == nil || !n.Status().EtcdMember {
			t.Errorf("control plane %s is not an etcd member after 1 -> 3", a)
		}
	}
	// A context of its own: the previous one's 30 s may have passed in the
	// steps since.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	rep = talosapi.CheckHealth(ctx2, talosapi.HealthRequest{
		ControlPlanes: []string{l.addr(10), l.addr(11), l.addr(12)}, Workers: []string{l.addr(13), l.addr(14)}, Creds: creds,
		Kubeconfig: []byte(out.Kubeconfig),
	}, talosapi.Options{})
	if len(rep.Problems) > 0 {
		t.Errorf("cluster after 1 -> 3 is not healthy: %v", rep.Problems)
	}

	// Destroy leaves the lab empty.
	tcTimed(t, "destroy", func() harness.Result { return p.Destroy(t) })
	if vms := l.VMs(); len(vms) != 0 {
		t.Errorf("destroy left VMs: %+v", vms)
	}
	for _, node := range l.Nodes() {
		for _, st := range l.Storages(node) {
			for _, v := range l.PVE.Volumes(node, st) {
				t.Errorf("destroy left volume %s on %s", v.VolID, node)
			}
		}
	}
}

// tcAssertKubeNodes checks the Kubernetes API lists exactly the named
// nodes, all Ready: removed nodes leave no NotReady Node object behind.
func tcAssertKubeNodes(t *testing.T, kubeconfig string, names ...string) {
	t.Helper()
	knodes, err := kube.Nodes([]byte(kubeconfig), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range knodes {
		got = append(got, n.Name)
		if !n.Ready {
			t.Errorf("Kubernetes node %s is not Ready", n.Name)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Errorf("Kubernetes nodes %v, want %v", got, want)
	}
}

func tcWithout(m map[string]int, key string) map[string]int {
	out := maps.Clone(m)
	delete(out, key)
	return out
}

// tcKeyLine is a line from the middle of a base64 private key inside a
// kubeconfig or talosconfig, to look for in logs.
func tcKeyLine(config string) string {
	for _, l := range strings.Split(config, "\n") {
		if strings.Contains(l, "key") && len(l) > 80 {
			return strings.TrimSpace(l)[len(strings.TrimSpace(l))-40:]
		}
	}
	return ""
}

// tcCredentials reads the client credentials of a talosconfig.
func tcCredentials(t *testing.T, talosconfig string) *talosapi.Credentials {
	t.Helper()
	var tc struct {
		Context  string `yaml:"context"`
		Contexts map[string]struct {
			CA  string `yaml:"ca"`
			Crt string `yaml:"crt"`
			Key string `yaml:"key"`
		} `yaml:"contexts"`
	}
	if err := yaml.Unmarshal([]byte(talosconfig), &tc); err != nil {
		t.Fatal(err)
	}
	c, ok := tc.Contexts[tc.Context]
	if !ok {
		t.Fatalf("talosconfig has no context %q", tc.Context)
	}
	dec := func(s string) []byte {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return &talosapi.Credentials{CA: dec(c.CA), Cert: dec(c.Crt), Key: dec(c.Key)}
}
