package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/examples/go-composition/composition"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// Issue 15, composition: the composed example (examples/go-composition) against the lab.
// Its TalosCluster takes the bridge, VLAN and DNS servers from another stack (a stack
// reference), one more DNS server from a VM of the same program (the address its guest
// agent reports: not known in the first preview), and the registry mirror's password from
// a configuration secret. The first preview succeeds, says which input is not known yet,
// and plans the cluster; up builds it with those values on the VMs; the password is in
// plain text nowhere in the state; a second preview changes nothing; destroy empties the
// lab.
func TestExampleGoComposition(t *testing.T) {
	t.Parallel()
	const bridge, vlan = "vmbrk8s", 20
	var nodes []pve.NodeSpec
	for _, name := range []string{"pve1", "pve2", "pve3"} {
		n := pve.DefaultNode(name)
		n.Bridges = []string{"vmbr0", bridge}
		nodes = append(nodes, n)
	}
	raw, conn := harness.StartLab(t, lab.Options{
		Nodes:     nodes,
		TimeScale: 0,
		Logf:      func(format string, args ...any) { t.Logf("lab: "+format, args...) },
	})
	l := &exampleLab{Lab: raw, Conn: conn}
	env := harness.NewEnv(t)
	ctx := context.Background()

	// The network team's stack, in the same backend.
	shared := l.addr(3)
	network := harness.InlineStack(t, env, "network", func(ctx *pulumi.Context) error {
		ctx.Export("bridge", pulumi.String(bridge))
		ctx.Export("vlan", pulumi.Int(vlan))
		ctx.Export("dnsServers", pulumi.ToStringArray([]string{shared}))
		return nil
	}, nil)
	if _, err := network.Up(ctx); err != nil {
		t.Fatalf("network stack: %v", err)
	}

	const project = "proxmoxtalos-go-composition"
	const password = "e2e-composed-mirror-password"
	stack := harness.InlineStack(t, env, project, composition.Program, nil)
	cfg := labConfig(l.Conn)
	set := func(k, v string) { cfg[project+":"+k] = auto.ConfigValue{Value: v} }
	set("networkStack", "organization/network/test")
	set("clusterName", "composed")
	set("host", "pve1")
	set("talosVersion", "v1.12.5")
	set("kubernetesVersion", "v1.34.1")
	set("imageFactoryUrl", l.FactoryURL())
	set("subnet", l.addr(0)+"/24")
	set("gateway", l.addr(1))
	set("resolverAddress", l.addr(40)+"/24")
	set("addressRangeStart", l.addr(11))
	set("addressRangeEnd", l.addr(20))
	set("mirrorHost", "mirror.example.com:5000")
	set("mirrorUser", "puller")
	cfg[project+":mirrorPassword"] = auto.ConfigValue{Value: password, Secret: true}
	if err := stack.SetAllConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	pre, err := stack.Preview(ctx, optpreview.ProgressStreams(&out), optpreview.ErrorProgressStreams(&out))
	if err != nil {
		t.Fatalf("first preview: %v\n%s", err, out.String())
	}
	want := "network.dnsServers is not known until the resources it comes from are created"
	if !strings.Contains(out.String(), want) {
		t.Errorf("first preview does not say %q:\n%s", want, out.String())
	}
	if n := pre.ChangeSummary["create"]; n < 8 {
		t.Errorf("first preview creates %d resources, want the resolver, its ISO and the whole cluster: %v", n, pre.ChangeSummary)
	}

	up, err := stack.Up(ctx, optup.ProgressStreams(testWriter{t}))
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	if dns := fmt.Sprint(up.Outputs["dnsServers"].Value); dns != fmt.Sprintf("[%s %s]", l.addr(40), shared) {
		t.Errorf("dnsServers output %s, want the resolver's reported address, then the network stack's", dns)
	}
	var node *pve.VMInfo
	for _, vm := range l.PVE.VMs() {
		if vm.Name == "composed-cp-1" {
			node = &vm
		}
	}
	if node == nil {
		t.Fatalf("no VM composed-cp-1 in the lab: %v", l.PVE.VMs())
	}
	conf, _, _ := l.PVE.VMConfig(node.VMID)
	if net0 := conf["net0"]; !strings.Contains(net0, "bridge="+bridge) || !strings.Contains(net0, fmt.Sprintf("tag=%d", vlan)) {
		t.Errorf("composed-cp-1 net0 = %q, want the network stack's bridge %s and VLAN %d", net0, bridge, vlan)
	}
	if ns := conf["nameserver"]; ns != l.addr(40)+" "+shared {
		t.Errorf("composed-cp-1 nameserver = %q, want %s %s", ns, l.addr(40), shared)
	}

	state, err := stack.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if paths := pathsHolding(t, state.Deployment, password); len(paths) > 0 {
		t.Errorf("the mirror password is in plain text in the stack's state at %v", paths)
	}

	checkUnchangedThenDestroy(t, l, stack)
}

// pathsHolding lists the JSON paths of a deployment whose string values contain needle
// outside a secret (the Automation API's export decrypts secrets, as `pulumi stack export
// --show-secrets` does: {"4dabf18193072939515e22adb298388d": ..., "plaintext": ...}).
func pathsHolding(t *testing.T, deployment []byte, needle string) []string {
	t.Helper()
	var doc any
	if err := json.Unmarshal(deployment, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, secret := x["4dabf18193072939515e22adb298388d"]; secret {
				return
			}
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			if strings.Contains(x, needle) {
				out = append(out, path)
			}
		}
	}
	walk("", doc)
	return out
}
