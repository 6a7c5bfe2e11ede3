package talosapi_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/eventctx"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

func TestSingleNodeLifecycle(t *testing.T) {
	t.Parallel()

	lab := bootOneCP(t, simtest.Version, time.Minute)
	s, cp, ctx, o, target := lab.sim, lab.addr, lab.ctx, lab.o, lab.target

	res, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: lab.config(t)}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("apply: %+v", res)

	out, err := talosapi.Bootstrap(ctx, target, o)
	if err != nil || out != talosapi.Bootstrapped {
		t.Fatalf("bootstrap: %q %v", out, err)
	}

	out, err = talosapi.Bootstrap(ctx, target, o)
	if err != nil || out != talosapi.AlreadyBootstrapped {
		t.Fatalf("second bootstrap: %q %v", out, err)
	}

	kc, err := talosapi.FetchKubeconfig(ctx, target, "", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubeconfig server %s expires %s", kc.Info.Server, kc.Info.NotAfter)

	rep, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: []string{cp.String()}, Creds: target.Creds, Kubeconfig: kc.Raw}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("health: %+v", rep)

	// Destroying the cluster ends with its last etcd member: a graceful
	// reset falls back to a non-graceful one (etcd cannot remove its last
	// member) and says so.
	var progress []string
	ro := o
	ro.Progress = func(msg string) { progress = append(progress, msg) }

	if _, err := talosapi.Reset(ctx, target, talosapi.ResetRequest{Graceful: true}, ro); err != nil {
		t.Fatalf("graceful reset of the last etcd member: %v", err)
	}

	said := strings.Join(progress, "\n")
	if !strings.Contains(said, "last etcd member") || !strings.Contains(said, "accepted the reset (graceful=false") {
		t.Fatalf("reset progress does not say it fell back to a non-graceful reset:\n%s", said)
	}

	deadline := time.Now().Add(time.Minute) // a guard against hanging, not a speed check
	for n := s.Node(cp); n != nil && n.Status().Phase != simtalos.PhaseOff; n = s.Node(cp) {
		if time.Now().After(deadline) {
			t.Fatalf("node still not off a minute after the reset (a hang guard): %+v", n.Status())
		}

		time.Sleep(10 * time.Millisecond)
	}
}

func TestClusterDayTwo(t *testing.T) {
	t.Parallel()

	s := simtest.Start(t)
	ip := simtest.AddressBlock()
	cps := []string{ip(2).String(), ip(3).String(), ip(4).String()}
	worker := ip(10).String()

	for i, a := range []int{2, 3, 4} {
		simtest.Boot(s, "cp"+string(rune('1'+i)), ip(a), "scsi0")
	}

	simtest.Boot(s, "w1", ip(10), "virtio0")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	o := simOptions(t)
	creds := adminCreds(t)
	endpoint := ip(2)

	configs := map[string][]byte{}
	for _, cp := range cps {
		configs[cp] = nodeConfig(t, talosconfig.RoleControlPlane, endpoint, "/dev/sda", simtest.Version)
	}

	configs[worker] = nodeConfig(t, talosconfig.RoleWorker, endpoint, "/dev/vda", simtest.Version)

	for node, cfg := range configs {
		res, err := talosapi.Apply(ctx, talosapi.Target{Node: node, Creds: creds}, talosapi.ApplyRequest{Config: cfg}, o)
		if err != nil {
			t.Fatal(err)
		}

		if (res.Unverified != "") != (node == worker) {
			t.Fatalf("node %s: unverified = %q", node, res.Unverified)
		}
	}

	if _, err := talosapi.Bootstrap(ctx, talosapi.Target{Node: cps[0], Creds: creds}, o); err != nil {
		t.Fatal(err)
	}

	kc, err := talosapi.FetchKubeconfig(ctx, talosapi.Target{Node: cps[0], Creds: creds}, "", o)
	if err != nil {
		t.Fatal(err)
	}

	health := talosapi.HealthRequest{ControlPlanes: cps, Workers: []string{worker}, Creds: creds, Kubeconfig: kc.Raw}
	if _, err := talosapi.WaitHealthy(ctx, health, o); err != nil {
		t.Fatal(err)
	}

	// A kubelet argument applies live.
	live := nodeConfig(t, talosconfig.RoleWorker, endpoint, "/dev/vda", simtest.Version, "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n")

	res, err := talosapi.Apply(ctx, talosapi.Target{Node: worker, Creds: creds}, talosapi.ApplyRequest{Config: live}, o)
	if err != nil || res.Applied != talosapi.ApplyNoReboot {
		t.Fatalf("live change: %+v %v", res, err)
	}

	// machine.env needs a reboot under auto.
	reboot := nodeConfig(t, talosconfig.RoleWorker, endpoint, "/dev/vda", simtest.Version, "machine:\n  env:\n    https_proxy: http://proxy.lan:3128\n")

	res, err = talosapi.Apply(ctx, talosapi.Target{Node: worker, Creds: creds}, talosapi.ApplyRequest{Config: reboot}, o)
	if err != nil || res.Applied != talosapi.ApplyReboot {
		t.Fatalf("reboot change: %+v %v", res, err)
	}

	// Upgrade one control plane.
	up, err := talosapi.Upgrade(ctx, talosapi.Target{Node: cps[1], Creds: creds}, talosapi.UpgradeRequest{Image: simtest.Installer("v1.12.6")}, o)
	if err != nil || up.From != simtest.Version || up.To != "v1.12.6" {
		t.Fatalf("upgrade: %+v %v", up, err)
	}

	// Without a kubeconfig of its own, the wait takes one from the first
	// control plane that hands one out (a worker refuses) and checks the
	// Kubernetes nodes with it.
	fetched := health
	fetched.Kubeconfig, fetched.KubeconfigFrom = nil, []string{worker, cps[0]}

	rep, err := talosapi.WaitHealthy(ctx, fetched, o)
	if err != nil {
		t.Fatal(err)
	}

	if len(rep.Nodes) != 4 {
		t.Errorf("Kubernetes nodes seen through a fetched kubeconfig: %v", rep.Nodes)
	}

	// Graceful reset of a control plane: etcd keeps two members.
	if _, err := talosapi.Reset(ctx, talosapi.Target{Node: cps[2], Creds: creds}, talosapi.ResetRequest{Graceful: true}, o); err != nil {
		t.Fatal(err)
	}

	health.ControlPlanes = cps[:2]

	hctx, hcancel := context.WithTimeout(ctx, 20*time.Second)
	defer hcancel()

	rep, err = talosapi.WaitHealthy(hctx, talosapi.HealthRequest{ControlPlanes: cps[:2], Creds: creds}, o)
	if err != nil {
		t.Fatalf("after reset: %v (%+v)", err, rep)
	}
}

func TestResetWithRebootReturnsToMaintenance(t *testing.T) {
	t.Parallel()

	lab := healthyControlPlanes(t, 2, time.Minute)
	cps, ctx, o, creds := lab.cps, lab.ctx, lab.o, lab.creds

	if _, err := talosapi.Reset(ctx, talosapi.Target{Node: cps[1], Creds: creds}, talosapi.ResetRequest{Graceful: true, Reboot: true}, o); err != nil {
		t.Fatal(err)
	}

	conn, err := talosapi.Connect(ctx, talosapi.Target{Node: cps[1], Creds: creds}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() //nolint:errcheck

	if conn.Mode != talosapi.ModeMaintenance {
		t.Fatalf("after reset with reboot: mode %s", conn.Mode)
	}

	if _, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: cps[:1], Creds: creds}, o); err != nil {
		t.Fatalf("etcd after the graceful reset: %v", err)
	}
}

func TestInstallDiskMissingAndUnreachableNode(t *testing.T) {
	t.Parallel()

	s := simtest.Start(t)
	ip := simtest.AddressBlock()
	simtest.Boot(s, "cp1", ip(2), "virtio0") // /dev/vda only

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	o := simOptions(t)
	creds := adminCreds(t)

	_, err := talosapi.Apply(ctx, talosapi.Target{Node: ip(2).String(), Creds: creds}, talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleControlPlane, ip(2), "/dev/sda", simtest.Version)}, o)
	if err == nil || !strings.Contains(err.Error(), "no disk /dev/sda") || !strings.Contains(err.Error(), "/dev/vda") {
		t.Fatalf("missing install disk: %v", err)
	}

	// Nothing at this address: a clear error after the timeout, which
	// passes at the first refused attempt (an event, not a clock: a second
	// ran out before the first attempt ended on a loaded machine).
	short := eventctx.New()
	uo := o
	uo.Progress = func(string) { short.Pass() }

	_, err = talosapi.Apply(short, talosapi.Target{Node: ip(9).String(), Creds: creds}, talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleControlPlane, ip(2), "/dev/sda", simtest.Version)}, uo)
	if err == nil || !strings.Contains(err.Error(), "timed out after") || !strings.Contains(err.Error(), ip(9).String()+":50000") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("unreachable node: %v", err)
	}
}

func TestStagedTryAndNoRebootModes(t *testing.T) {
	t.Parallel()

	lab := bootOneCP(t, simtest.Version, time.Minute)
	cp, ctx, o, target := lab.addr, lab.ctx, lab.o, lab.target
	base := lab.config(t)

	if _, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: base}, o); err != nil {
		t.Fatal(err)
	}

	digestOf := func(b []byte) string {
		d, err := talosapi.ConfigDigest(b)
		if err != nil {
			t.Fatal(err)
		}

		return d
	}

	// no-reboot with a change that needs a reboot: refused by the node.
	env := nodeConfig(t, talosconfig.RoleControlPlane, cp, "/dev/sda", simtest.Version, "machine:\n  env:\n    https_proxy: http://proxy.lan:3128\n")

	if _, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: env, Mode: talosapi.ApplyNoReboot}, o); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("no-reboot of a rebooting change: %v", err)
	}

	// staged: saved for the next boot, the node keeps running the old one.
	res, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: env, Mode: talosapi.ApplyStaged}, o)
	if err != nil || res.Applied != talosapi.ApplyStaged {
		t.Fatalf("staged: %+v %v", res, err)
	}

	nc, _, _, err := talosapi.ReadConfig(ctx, target, o)
	if err != nil {
		t.Fatal(err)
	}

	if nc.ActiveDigest != digestOf(base) || nc.PersistentDigest != digestOf(env) {
		t.Fatal("staged configuration is active, or not saved")
	}

	// the active text alone: the one running, not the staged one
	active, mode, version, err := talosapi.ReadActiveConfig(ctx, target, o)
	if err != nil {
		t.Fatal(err)
	}

	if mode != talosapi.ModeSecure || version == "" || !bytes.Equal(active.Active, nc.Active) || active.PersistentDigest != "" {
		t.Fatalf("active configuration alone: mode %q, version %q, same text %v, persistent digest %q",
			mode, version, bytes.Equal(active.Active, nc.Active), active.PersistentDigest)
	}

	// try: live at once, rolled back by the node after the timeout.
	label := nodeConfig(t, talosconfig.RoleControlPlane, cp, "/dev/sda", simtest.Version, "machine:\n  nodeLabels:\n    try: \"yes\"\n")

	res, err = talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: label, Mode: talosapi.ApplyTry, TryTimeout: 300 * time.Millisecond}, o)
	if err != nil || res.Applied != talosapi.ApplyTry {
		t.Fatalf("try: %+v %v", res, err)
	}

	deadline := time.Now().Add(time.Minute) // a guard against hanging, not a speed check

	for {
		nc, _, _, err = talosapi.ReadConfig(ctx, target, o)
		if err == nil && nc.ActiveDigest != digestOf(label) {
			break
		}

		if time.Now().After(deadline) {
			t.Fatalf("try-mode configuration still not rolled back after a minute (a hang guard): %v", err)
		}

		time.Sleep(50 * time.Millisecond)
	}
}

// Upgrade's two other paths: a staged upgrade (Talos saves it and runs it on
// the reboot that follows), and an upgrade to another installer image of the
// same version (another Image Factory schematic), which only runs with
// EvenIfSameVersion.
func TestStagedAndSchematicOnlyUpgrades(t *testing.T) {
	t.Parallel()

	lab := bootOneCP(t, simtest.Version, time.Minute)
	s, node, ctx, o, target := lab.sim, lab.node, lab.ctx, lab.o, lab.target
	lab.applyConfig(t)

	if _, err := talosapi.Bootstrap(ctx, target, o); err != nil {
		t.Fatal(err)
	}

	boots := node.Status().Boots

	staged, err := talosapi.Upgrade(ctx, target, talosapi.UpgradeRequest{Image: simtest.Installer("v1.12.6"), Stage: true}, o)
	if err != nil || staged.Skipped || !staged.Accepted || staged.From != simtest.Version || staged.To != "v1.12.6" {
		t.Fatalf("staged upgrade: %+v %v", staged, err)
	}

	if st := node.Status(); st.Image.Version != "v1.12.6" || st.Image.Schematic != simtest.Schematic || st.Boots <= boots {
		t.Fatalf("after the staged upgrade: image %q, boots %d (before %d)", st.Image, st.Boots, boots)
	}

	// Same version, another schematic: without EvenIfSameVersion nothing is
	// sent; with it the node installs the new image and comes back.
	otherID := s.Catalog().Register("siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools")
	other := "factory.talos.dev/nocloud-installer/" + otherID + ":v1.12.6"

	skipped, err := talosapi.Upgrade(ctx, target, talosapi.UpgradeRequest{Image: other}, o)
	if err != nil || !skipped.Skipped || node.Status().Image.Schematic != simtest.Schematic {
		t.Fatalf("same version without EvenIfSameVersion: %+v %v, image %q", skipped, err, node.Status().Image)
	}

	boots = node.Status().Boots

	schematic, err := talosapi.Upgrade(ctx, target, talosapi.UpgradeRequest{Image: other, EvenIfSameVersion: true}, o)
	if err != nil || schematic.Skipped || !schematic.Accepted || schematic.From != "v1.12.6" || schematic.To != "v1.12.6" {
		t.Fatalf("schematic-only upgrade: %+v %v", schematic, err)
	}

	st := node.Status()
	if st.Image.Schematic != otherID || st.Image.Version != "v1.12.6" || st.Boots <= boots || !slices.Contains(st.Extensions, "siderolabs/iscsi-tools") {
		t.Fatalf("after the schematic-only upgrade: image %q, boots %d (before %d), extensions %v", st.Image, st.Boots, boots, st.Extensions)
	}
}
