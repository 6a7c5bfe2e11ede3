package talos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// kubectl runs the real kubectl (the one on PATH, v1.32 on these machines)
// against a lab cluster with the admin kubeconfig the Talos API hands out.
type kubectl struct {
	t    *testing.T
	bin  string
	env  []string
	args []string
}

func newKubectl(t *testing.T, kubeconfig []byte) *kubectl {
	t.Helper()

	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("these tests run the real kubectl, which is not on PATH: %v", err)
	}

	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")

	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}

	return &kubectl{t: t, bin: bin, env: append(os.Environ(), "KUBECONFIG="+kc, "HOME="+dir), args: []string{"--request-timeout=30s"}}
}

// run runs kubectl and returns its output; a failure fails the test.
func (k *kubectl) run(stdin string, args ...string) string {
	k.t.Helper()

	out, err := k.try(stdin, args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	return out
}

func (k *kubectl) try(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cmd := exec.CommandContext(ctx, k.bin, append(append([]string{}, k.args...), args...)...)
	cmd.Env = k.env
	cmd.Stdin = strings.NewReader(stdin)

	out, err := cmd.CombinedOutput()

	return string(out), err
}

// eventually re-runs kubectl until its output matches (the lab's
// controllers act asynchronously, as real ones do).
func (k *kubectl) eventually(re string, args ...string) string {
	k.t.Helper()

	rx := regexp.MustCompile(re)

	var out string

	waitFor(k.t, "kubectl "+strings.Join(args, " ")+" to match "+re, func() bool {
		var err error
		out, err = k.try("", args...)

		return err == nil && rx.MatchString(out)
	})

	return out
}

func mustMatch(t *testing.T, what, out string, res ...string) {
	t.Helper()

	for _, re := range res {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("%s: no match for %q in:\n%s", what, re, out)
		}
	}
}

// TestKubectl runs the commands an operator uses first (version, get, describe,
// cordon, drain, label, taint, watch, api-resources, apply) against a lab
// cluster: its Kubernetes API is a real kube-apiserver, its nodes are
// registered by the simulated kubelets.
func TestKubectl(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1, workers: 2})
	tc.bootstrap(t)

	k := newKubectl(t, tc.kubeconfig(t))
	tools := kubeToolsT(t)
	cp, w1, w2 := tc.cps[0].addr().String(), tc.workers[0].addr().String(), tc.workers[1].addr().String()

	out := k.run("", "version", "-o", "yaml")
	mustMatch(t, "version", out, `gitVersion: `+regexp.QuoteMeta(tools.KubernetesVersion))

	// -o wide: every column from the kubelets' status.
	out = k.run("", "get", "nodes", "-o", "wide")
	mustMatch(t, "get nodes -o wide", out,
		`NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\s+INTERNAL-IP\s+EXTERNAL-IP\s+OS-IMAGE\s+KERNEL-VERSION\s+CONTAINER-RUNTIME`,
		`(?m)^cp1\s+Ready\s+control-plane\s+\S+\s+v1\.35\.2\s+`+regexp.QuoteMeta(cp)+`\s+<none>\s+Talos \(v1\.12\.\d+\)\s+\S+-talos\s+containerd://`,
		`(?m)^w1\s+Ready\s+<none>\s+\S+\s+v1\.35\.2\s+`+regexp.QuoteMeta(w1)+`\s`,
		`(?m)^w2\s+Ready\s+<none>\s+\S+\s+v1\.35\.2\s+`+regexp.QuoteMeta(w2)+`\s`)

	// The control plane's static pods, mirrored by its kubelet.
	out = k.eventually(`kube-scheduler-cp1\s+1/1\s+Running`, "get", "pods", "-A")
	mustMatch(t, "get pods -A", out,
		`NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE`,
		`(?m)^kube-system\s+kube-apiserver-cp1\s+1/1\s+Running\s+0\s`,
		`(?m)^kube-system\s+kube-controller-manager-cp1\s+1/1\s+Running\s+0\s`)

	// Talos's bootstrap manifests, run by the lab's controllers and
	// kubelets: kube-proxy and flannel on every node, CoreDNS's two
	// replicas with pod IPs from their node's pod CIDR.
	k.eventually(`(?m)^coredns\s+2/2\s+2\s+2\s`, "get", "deployments", "-n", "kube-system")
	out = k.eventually(`(?m)^kube-proxy\s+3\s+3\s+3\s+3\s+3\s`, "get", "daemonsets", "-n", "kube-system")
	mustMatch(t, "daemonsets", out, `(?m)^kube-flannel\s+3\s+3\s+3\s+3\s+3\s`)
	out = k.run("", "get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns", "-o", "wide")
	mustMatch(t, "coredns pods", out, `(?m)^coredns-[a-z0-9]+-[a-z0-9]{5}\s+1/1\s+Running\s+0\s+\S+\s+10\.244\.\d+\.\d+\s`)
	out = k.run("", "get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-proxy", "--field-selector", "spec.nodeName=w1", "-o", "wide")
	mustMatch(t, "kube-proxy pod", out, `(?m)^kube-proxy-[a-z0-9]{5}\s+1/1\s+Running\s+0\s+\S+\s+`+regexp.QuoteMeta(w1)+`\s+w1\s`)

	// kubectl logs: the apiserver proxies to the node's kubelet API
	// (<address>:10250); kube-apiserver's log is the real one's output.
	out = k.run("", "logs", "-n", "kube-system", "kube-apiserver-cp1", "--tail=3")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !regexp.MustCompile(`^[IWE]\d{4} `).MatchString(lines[0]) {
		t.Fatalf("kube-apiserver's last 3 log lines: %q", out)
	}

	out = k.run("", "logs", "-n", "kube-system", "deployment/coredns", "--timestamps")
	mustMatch(t, "coredns logs", out, `(?m)^\d{4}-\d\d-\d\dT\S+Z lab: container "coredns" \(registry\.k8s\.io/coredns/coredns:v\S+\) of pod kube-system/coredns-`)

	// exec, attach, port-forward: the lab's containers run no process, so
	// the kubelet answers as for containers its runtime does not run.
	streamingRefusals(t, tc, k)

	out = k.run("", "describe", "node", "w1")
	mustMatch(t, "describe node", out,
		`Name:\s+w1\n`, `Roles:\s+<none>`, `kubernetes\.io/hostname=w1`,
		`Ready\s+True\s.*KubeletReady`, `InternalIP:\s+`+regexp.QuoteMeta(w1),
		`Boot ID:\s+[0-9a-f-]{36}`, `Kubelet Version:\s+v1\.35\.2`, `Kube-Proxy Version:`,
		`PodCIDR:\s+10\.244\.\d+\.0/24`, `Capacity:\n\s+cpu:`)

	// cordon: spec.unschedulable, and kube-controller-manager's taint.
	mustMatch(t, "cordon", k.run("", "cordon", "w1"), `node/w1 cordoned`)
	mustMatch(t, "cordoned", k.run("", "get", "node", "w1"), `w1\s+Ready,SchedulingDisabled`)
	k.eventually(`node\.kubernetes\.io/unschedulable`, "get", "node", "w1", "-o", "jsonpath={.spec.taints[*].key}")
	mustMatch(t, "uncordon", k.run("", "uncordon", "w1"), `node/w1 uncordoned`)

	// drain: kubectl cordons, then evicts what it may; the control plane's
	// mirror pods are the kubelet's own and are left (kubectl drain's
	// mirror pod filter), so the drain ends without --force.
	mustMatch(t, "drain", k.run("", "drain", "cp1", "--ignore-daemonsets", "--timeout=60s"), `node/cp1 cordoned`, `node/cp1 drained`)
	mustMatch(t, "drained", k.run("", "get", "node", "cp1"), `cp1\s+Ready,SchedulingDisabled`)
	mustMatch(t, "mirror pods stay", k.run("", "get", "pods", "-n", "kube-system", "--field-selector", "spec.nodeName=cp1", "-o", "name"), `pod/kube-apiserver-cp1`)
	mustMatch(t, "uncordon cp1", k.run("", "uncordon", "cp1"), `node/cp1 uncordoned`)

	// api-resources: the real apiserver's discovery (kubectl's aggregated
	// discovery request).
	out = k.run("", "api-resources")
	mustMatch(t, "api-resources", out,
		`NAME\s+SHORTNAMES\s+APIVERSION\s+NAMESPACED\s+KIND`,
		`(?m)^nodes\s+no\s+v1\s+false\s+Node$`,
		`(?m)^deployments\s+deploy\s+apps/v1\s+true\s+Deployment$`,
		`(?m)^leases\s+coordination\.k8s\.io/v1\s+true\s+Lease$`)

	// A user's Deployment: scheduled onto the workers (the control plane
	// is tainted), run, rolled out, scaled, deleted with its pods.
	mustMatch(t, "create deployment", k.run("", "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10", "--replicas=2"), `deployment.apps/web created`)
	mustMatch(t, "rollout status", k.run("", "rollout", "status", "deployment/web", "--timeout=60s"), `deployment "web" successfully rolled out`)
	mustMatch(t, "scale", k.run("", "scale", "deployment/web", "--replicas=3"), `deployment.apps/web scaled`)
	k.eventually(`(?m)^web\s+3/3\s+3\s+3\s`, "get", "deployment", "web")

	out = k.run("", "get", "pods", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}")
	if strings.Contains(out, "cp1") || len(strings.Fields(out)) != 3 {
		t.Fatalf("web's pods belong on the workers: %q", out)
	}

	mustMatch(t, "delete deployment", k.run("", "delete", "deployment", "web"), `deployment.apps "web" deleted`)
	k.eventually(`^(No resources found[^\n]*\n)?$`, "get", "pods", "-l", "app=web", "-o", "name")

	// label and label selectors; field selectors.
	mustMatch(t, "label", k.run("", "label", "node", "w1", "lab.example/tier=blue"), `node/w1 labeled`)
	out = k.run("", "get", "nodes", "-l", "lab.example/tier=blue", "-o", "name")
	if strings.TrimSpace(out) != "node/w1" {
		t.Fatalf("label selector: %q", out)
	}

	out = k.run("", "get", "nodes", "-l", "!node-role.kubernetes.io/control-plane", "-o", "name")
	if strings.Fields(out)[0] != "node/w1" || len(strings.Fields(out)) != 2 {
		t.Fatalf("negated label selector: %q", out)
	}

	out = k.run("", "get", "nodes", "--field-selector", "metadata.name=w2", "-o", "name")
	if strings.TrimSpace(out) != "node/w2" {
		t.Fatalf("field selector: %q", out)
	}

	out = k.run("", "get", "pods", "-n", "kube-system", "--field-selector", "spec.nodeName=cp1", "-o", "name")
	mustMatch(t, "pods by node", out, `pod/kube-apiserver-cp1`)

	// taint: the user's taint survives the lab's controllers' next rounds.
	mustMatch(t, "taint", k.run("", "taint", "node", "w2", "dedicated=lab:NoSchedule"), `node/w2 tainted`)
	time.Sleep(3 * time.Second) // a few agent rounds
	mustMatch(t, "taint kept", k.run("", "get", "node", "w2", "-o", "jsonpath={.spec.taints}"), `"key":"dedicated"`)

	// watch: the initial list, then the change made meanwhile.
	watchNodes(t, k)

	// server-side apply, its field ownership and conflicts.
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lab-demo\n  namespace: default\ndata:\n  color: blue\n"
	mustMatch(t, "apply --server-side", k.run(cm, "apply", "--server-side", "-f", "-"), `configmap/lab-demo serverside-applied`)
	mustMatch(t, "managed fields", k.run("", "get", "configmap", "lab-demo", "-o", "jsonpath={.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}"), `^kubectl Apply$`)

	_, err := k.try(strings.Replace(cm, "blue", "red", 1), "apply", "--server-side", "--field-manager=other", "-f", "-")
	if err == nil {
		t.Fatal("a second field manager changed an owned field without --force-conflicts")
	}

	mustMatch(t, "apply conflict", k.run(strings.Replace(cm, "blue", "red", 1), "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-"), `configmap/lab-demo serverside-applied`)
	mustMatch(t, "applied", k.run("", "get", "configmap", "lab-demo", "-o", "jsonpath={.data.color}"), `^red$`)
}

// watchNodes runs `kubectl get nodes --watch` (bounded by a context),
// labels a node meanwhile and expects the modification in the stream.
func watchNodes(t *testing.T, k *kubectl) {
	t.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cmd := exec.CommandContext(ctx, k.bin, "get", "nodes", "--watch", "--output-watch-events", "-L", "lab.example/tier")
	cmd.Env = k.env

	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	defer func() { cancel(); cmd.Wait() }() //nolint:errcheck

	lines := bufio.NewScanner(stdout)
	seen := []string{}
	labeled := false

	for lines.Scan() {
		line := lines.Text()
		seen = append(seen, line)

		if !labeled && regexp.MustCompile(`^ADDED\s+w2\s`).MatchString(line) {
			labeled = true

			k.run("", "label", "node", "w2", "lab.example/tier=green")
		}

		if regexp.MustCompile(`^MODIFIED\s+w2\s.*\sgreen$`).MatchString(line) {
			return
		}
	}

	t.Fatalf("kubectl get nodes --watch did not show w2 labeled green:\n%s", strings.Join(seen, "\n"))
}

// streamingRefusals: kubectl exec, attach and port-forward get the
// kubelet's answers for containers and pods its runtime does not run
// (kubeletapi_stream.go), relayed by the real apiserver; the kubelet API
// itself checks the options and the pod first.
func streamingRefusals(t *testing.T, tc *testCluster, k *kubectl) {
	t.Helper()

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "-n", "kube-system", "kube-apiserver-cp1", "--", "true"}, `unable to upgrade connection: container not found ("kube-apiserver")`},
		{[]string{"attach", "-n", "kube-system", "kube-apiserver-cp1"}, `unable to upgrade connection: container kube-apiserver not found in pod kube-apiserver-cp1_kube-system`},
		{[]string{"port-forward", "-n", "kube-system", "pod/kube-apiserver-cp1", "0:6443"}, `unable to upgrade connection: pod not found ("kube-apiserver-cp1_kube-system")`},
	} {
		if out, err := k.try("", c.args...); err == nil || !strings.Contains(out, c.want) {
			t.Errorf("kubectl %s: err %v, want %q in:\n%s", strings.Join(c.args, " "), err, c.want, out)
		}
	}

	hc, _ := kubeHTTP(t, tc.kubeconfig(t))
	kubelet := "https://" + tc.cps[0].addr().String() + ":10250"

	for _, c := range []struct{ path, want string }{
		{"/exec/kube-system/kube-apiserver-cp1/kube-apiserver?command=true", "400 you must specify at least 1 of stdin, stdout, stderr"},
		{"/exec/kube-system/coredns-elsewhere/coredns?command=true&output=1", "404 pod does not exist"},
		{"/portForward/kube-system/coredns-elsewhere", "404 pod does not exist"},
	} {
		resp, err := hc.Post(kubelet+c.path, "", nil)
		if err != nil {
			t.Fatal(err)
		}

		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close() //nolint:errcheck

		if got := fmt.Sprintf("%d %s", resp.StatusCode, body); got != c.want {
			t.Errorf("kubelet API POST %s: %q, want %q", c.path, got, c.want)
		}
	}
}
