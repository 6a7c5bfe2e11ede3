package talos

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTalosctl runs the real talosctl (the release the lab's tools pin)
// against one bootstrapped lab cluster, a command per subtest, each with an
// assertion on what it prints. The mutating commands (apply-config, reboot,
// upgrade) come last.
func TestTalosctl(t *testing.T) {
	tc := bootCluster(t, clusterOpts{cps: 1, workers: 1})
	tc.bootstrap(t)

	x := newTalosctl(t, tc)
	cp, w := tc.cps[0], tc.workers[0]
	ep := cp.addr()

	on := func(t *testing.T, node *vm, args ...string) string {
		t.Helper()

		return x.run(t, ep, node.addr(), args...)
	}

	t.Run("version", func(t *testing.T) {
		out := on(t, cp, "version")
		contains(t, "version", out, "Client:", "Server:", "NODE:        "+cp.addr().String(), "Tag:         "+testVersion, "Enabled:     RBAC")
	})

	t.Run("get rd", func(t *testing.T) {
		out := on(t, cp, "get", "rd")
		// machined registers every type, the meta ones included.
		for _, typ := range []string{"resourcedefinitions.meta.cosi.dev", "namespaces.meta.cosi.dev", "members.cluster.talos.dev", "volumestatuses.block.talos.dev", "staticpods.kubernetes.talos.dev"} {
			mustRow(t, "get rd", out, typ)
		}
	})

	t.Run("get members", func(t *testing.T) {
		out := on(t, cp, "get", "members")
		mustRow(t, "cp1", out, "cp1", "controlplane", "Talos", "("+testVersion+")", `["`+cp.addr().String()+`"]`)
		mustRow(t, "w1", out, "w1", "worker", "Talos", "("+testVersion+")", `["`+w.addr().String()+`"]`)
	})

	t.Run("get nodename", func(t *testing.T) {
		mustRow(t, "nodename", on(t, w, "get", "nodename"), "Nodename", "w1")
	})

	t.Run("get machineconfig", func(t *testing.T) {
		out := on(t, cp, "get", "machineconfig", "-o", "yaml")
		contains(t, "machineconfig", out, "id: v1alpha1", "type: MachineConfigs.config.talos.dev", "type: controlplane")
	})

	t.Run("get machinestatus", func(t *testing.T) {
		mustRow(t, "machinestatus", on(t, cp, "get", "machinestatus"), "MachineStatus", "running", "true")
	})

	t.Run("get disks", func(t *testing.T) {
		// 20 GiB as humanize.Bytes prints it.
		mustRow(t, "disks", on(t, cp, "get", "disks"), "Disk", "sda", "22", "GB", "scsi", "QEMU", "HARDDISK", "drive-scsi0")
	})

	t.Run("get systemdisk", func(t *testing.T) {
		mustRow(t, "systemdisk", on(t, cp, "get", "systemdisk"), "SystemDisk", "system-disk", "sda")
	})

	t.Run("get addresses", func(t *testing.T) {
		out := on(t, cp, "get", "addresses")
		mustRow(t, "ens18", out, "ens18/"+cp.addr().String()+"/24", cp.addr().String()+"/24", "ens18")
		mustRow(t, "lo", out, "lo/127.0.0.1/8", "127.0.0.1/8", "lo")
	})

	t.Run("get links", func(t *testing.T) {
		out := on(t, cp, "get", "links")
		mustRow(t, "ens18", out, "ens18", "ether", hexMAC(cp.addr()), "up", "true")
		mustRow(t, "lo", out, "lo", "loopback")
	})

	t.Run("get routes", func(t *testing.T) {
		subnet := netip.PrefixFrom(cp.addr(), 24).Masked().String()
		mustRow(t, "connected route", on(t, cp, "get", "routes"), subnet, "ens18")
	})

	t.Run("get extensions", func(t *testing.T) {
		out := on(t, cp, "get", "extensions")
		mustRow(t, "qemu-guest-agent", out, "ExtensionStatus", "qemu-guest-agent")
		mustRow(t, "schematic", out, "ExtensionStatus", "schematic", qgaID)
	})

	t.Run("get volumestatus", func(t *testing.T) {
		out := on(t, cp, "get", "volumestatus")
		mustRow(t, "EPHEMERAL", out, "EPHEMERAL", "partition", "ready", "/dev/sda6")
		mustRow(t, "STATE", out, "STATE", "partition", "ready", "/dev/sda5", "105", "MB")
		mustRow(t, "META", out, "META", "partition", "ready", "/dev/sda4")
	})

	t.Run("get mountstatus", func(t *testing.T) {
		out := on(t, cp, "get", "mountstatus")
		mustRow(t, "EPHEMERAL", out, "EPHEMERAL", "/dev/sda6", "/var", "xfs")
		mustRow(t, "STATE", out, "STATE", "/dev/sda5", "/system/state", "xfs")
	})

	t.Run("get staticpods", func(t *testing.T) {
		out := on(t, cp, "get", "staticpods")

		for _, pod := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			mustRow(t, pod, out, "StaticPod", pod)
		}

		if out := on(t, w, "get", "staticpods"); strings.Contains(out, "kube-apiserver") {
			t.Errorf("a worker runs no control plane static pods:\n%s", out)
		}
	})

	t.Run("get etcdmembers", func(t *testing.T) {
		member := strings.Fields(mustRow(t, "etcd members", on(t, cp, "etcd", "members"), "cp1"))
		if len(member) < 2 {
			t.Fatal("no member ID")
		}

		mustRow(t, "local member", on(t, cp, "get", "etcdmembers"), "EtcdMember", "local", member[1])
	})

	t.Run("get services", func(t *testing.T) {
		out := on(t, cp, "get", "services")

		for _, svc := range []string{"apid", "etcd", "kubelet", "ext-qemu-guest-agent"} {
			mustRow(t, svc, out, "Service", svc, "true", "true", "false")
		}
	})

	t.Run("get --watch", func(t *testing.T) {
		// The watch bootstraps with what exists, then follows until stopped.
		watchRow := []string{"+", "MachineStatus", "machine", "running", "true"}
		out, _, _ := x.execUntil(t, func(out string) bool { _, ok := row(out, watchRow...); return ok },
			ep, cp.addr(), "get", "machinestatus", "--watch")
		mustRow(t, "watch", out, watchRow...)
	})

	t.Run("resource versions move only with content", func(t *testing.T) {
		version := func() string {
			var r struct {
				Metadata struct {
					Version json.Number `json:"version"`
				} `json:"metadata"`
			}

			if err := json.Unmarshal([]byte(on(t, cp, "get", "machinestatus", "-o", "json")), &r); err != nil {
				t.Fatal(err)
			}

			return r.Metadata.Version.String()
		}

		first := version()

		cp.node.publish()
		cp.node.publish()

		if second := version(); second != first {
			t.Errorf("MachineStatus version moved from %s to %s without a change", first, second)
		}
	})

	t.Run("services", func(t *testing.T) {
		out := on(t, cp, "services")
		mustRow(t, "apid", out, cp.addr().String(), "apid", "Running", "OK")
		mustRow(t, "etcd", out, cp.addr().String(), "etcd", "Running", "OK")
	})

	t.Run("etcd members", func(t *testing.T) {
		out := on(t, cp, "etcd", "members")
		mustRow(t, "cp1", out, "cp1", "https://"+cp.addr().String()+":2380", "https://"+cp.addr().String()+":2379", "false")
	})

	t.Run("etcd status", func(t *testing.T) {
		out := on(t, cp, "etcd", "status")
		contains(t, "etcd status", out, "NODE", "MEMBER", "DB SIZE", "LEADER")
		line := mustRow(t, "etcd status", out, cp.addr().String(), trimV(kubeToolsT(t).EtcdVersion), "3.6.0")

		// A single member leads itself: its ID is both MEMBER and LEADER;
		// the database holds what the apiserver wrote (real etcd's size).
		if f := strings.Fields(line); len(f) < 4 || strings.Count(line, f[1]) != 2 || f[2] == "0" {
			t.Errorf("a single member is its own leader, with data:\n%s", out)
		}
	})

	t.Run("etcd alarm list", func(t *testing.T) {
		if out := on(t, cp, "etcd", "alarm", "list"); strings.TrimSpace(out) != "" {
			t.Errorf("no alarms: talosctl prints nothing, got:\n%s", out)
		}
	})

	t.Run("etcd alarm disarm", func(t *testing.T) {
		if err := tc.sim.SetEtcdAlarm(cp.node, "NOSPACE"); err != nil {
			t.Fatal(err)
		}

		mustRow(t, "alarm raised", on(t, cp, "etcd", "alarm", "list"), cp.addr().String(), "NOSPACE")
		mustRow(t, "disarmed", on(t, cp, "etcd", "alarm", "disarm"), cp.addr().String(), "NOSPACE")

		if out := on(t, cp, "etcd", "alarm", "list"); strings.TrimSpace(out) != "" {
			t.Errorf("alarms after disarm:\n%s", out)
		}
	})

	t.Run("etcd defrag and forfeit-leadership", func(t *testing.T) {
		on(t, cp, "etcd", "defrag")
		// The only member has nobody to hand leadership to: it stays leader.
		on(t, cp, "etcd", "forfeit-leadership")
		line := mustRow(t, "still leader", on(t, cp, "etcd", "status"), cp.addr().String())

		if f := strings.Fields(line); len(f) < 2 || strings.Count(line, f[1]) != 2 {
			t.Errorf("the single member no longer leads:\n%s", line)
		}
	})

	t.Run("etcd snapshot", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "etcd.db")
		out := on(t, cp, "etcd", "snapshot", path)
		// talosctl checks the sha256 and reads the database with etcd's
		// snapshot manager: real keys, written by the real apiserver.
		contains(t, "etcd snapshot", out, "etcd snapshot saved to", "snapshot info: hash ")

		if m := regexp.MustCompile(`total keys (\d+)`).FindStringSubmatch(out); m == nil || m[1] == "0" {
			t.Errorf("the snapshot holds no keys:\n%s", out)
		}
	})

	t.Run("etcd on a worker", func(t *testing.T) {
		_, errOut, err := x.exec(t, ep, w.addr(), "etcd", "status")
		if err == nil || !strings.Contains(errOut, "etcd status is only available on control plane nodes") {
			t.Errorf("etcd status on a worker: err %v, stderr:\n%s", err, errOut)
		}
	})

	t.Run("kubeconfig", func(t *testing.T) {
		dir := t.TempDir()
		on(t, cp, "kubeconfig", dir)

		b, err := os.ReadFile(filepath.Join(dir, "kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}

		contains(t, "kubeconfig", string(b), "server: https://"+ep.String()+":6443", "client-certificate-data:", "admin@")
	})

	t.Run("read", func(t *testing.T) {
		out := on(t, cp, "read", "/proc/sys/kernel/random/boot_id")
		if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$`).MatchString(out) {
			t.Errorf("boot_id: %q", out)
		}

		contains(t, "os-release", on(t, cp, "read", "/etc/os-release"), "PRETTY_NAME=\"Talos ("+testVersion+")\"")

		_, errOut, err := x.exec(t, ep, cp.addr(), "read", "/no/such/file")
		if err == nil || !strings.Contains(errOut, "stat /no/such/file: no such file or directory") {
			t.Errorf("read of a missing file: err %v, stderr:\n%s", err, errOut)
		}
	})

	t.Run("logs", func(t *testing.T) {
		contains(t, "logs kubelet", on(t, cp, "logs", "kubelet"), "service[kubelet](Running)")
	})

	t.Run("dmesg", func(t *testing.T) {
		out := on(t, cp, "dmesg")
		contains(t, "dmesg", out, "kern:    info:", "Linux version", "user: warning:", "[talos] ")
	})

	t.Run("memory", func(t *testing.T) {
		out := on(t, cp, "memory")
		contains(t, "memory", out, "TOTAL", "USED", "FREE", "AVAILABLE")
		mustRow(t, "memory", out, cp.addr().String(), "1928")
	})

	t.Run("events", func(t *testing.T) {
		// The whole history of this boot, then talosctl follows until stopped.
		want := []string{"EVENT", "ACTOR", "SOURCE", "talos/runtime/machine.MachineStatusEvent", "RUNNING", "ready: true",
			"talos/runtime/machine.ServiceStateEvent", "kubelet", "RUNNING: Health check successful"}
		out, _, _ := x.execUntil(t, func(out string) bool { return containsAll(out, want...) }, ep, cp.addr(), "events", "--tail", "-1")
		contains(t, "events", out, want...)
	})

	t.Run("time", func(t *testing.T) {
		mustRow(t, "time", on(t, cp, "time"), cp.addr().String(), "time.cloudflare.com")
	})

	t.Run("health", func(t *testing.T) {
		// Client side: talosctl runs Talos's default cluster checks
		// (pkg/cluster/check) itself against the nodes cluster discovery
		// lists; each must pass, none may be skipped (a skip means a
		// resource Talos publishes was missing, such as KubeletConfig or
		// the bootstrap manifests' config).
		checks := []string{
			"etcd to be healthy", "etcd members to be consistent across nodes", "etcd members to be control plane nodes",
			"apid to be ready", "all nodes memory sizes", "all nodes disk sizes", "no diagnostics", "kubelet to be healthy",
			"all nodes to finish boot sequence", "all k8s nodes to report", "all control plane static pods to be running",
			"all control plane components to be ready", "all k8s nodes to report ready", "kube-proxy to report ready",
			"coredns to report ready", "all k8s nodes to report schedulable",
		}

		for _, mode := range []string{"--server=false", "--server=true"} {
			// Server side (talosctl's default): the control plane's
			// machined runs the same checks (ClusterService.HealthCheck)
			// and streams its status lines.
			_, errOut, err := x.exec(t, ep, cp.addr(), "health", mode)
			if err != nil {
				t.Fatalf("health %s: %v\n%s", mode, err, errOut)
			}

			for _, check := range checks {
				contains(t, "health "+mode, errOut, "waiting for "+check+": OK")
			}

			if mode == "--server=true" {
				contains(t, "server-side health", errOut, `discovered nodes: [`, `"`+cp.addr().String()+`"`, `"`+w.addr().String()+`"`)
			}

			if strings.Contains(errOut, "SKIP") {
				t.Errorf("health %s skipped a check:\n%s", mode, errOut)
			}
		}

		// The nodes named in the request instead of the discovered ones:
		// a node that is not there fails its check (apid) until the wait
		// timeout ends the health check.
		cpFlag, wFlag := "--control-plane-nodes="+cp.addr().String(), "--worker-nodes="+w.addr().String()
		_, errOut := x.runBoth(t, ep, cp.addr(), "health", cpFlag, wFlag)
		contains(t, "health with node lists", errOut, "waiting for all k8s nodes to report: OK", "waiting for all k8s nodes to report schedulable: OK")

		missing := cp.addr().Next().Next().Next().String()
		if _, errOut, err := x.exec(t, ep, cp.addr(), "health", cpFlag, wFlag+","+missing, "--wait-timeout=20s"); err == nil ||
			!strings.Contains(errOut, `waiting for apid to be ready: error getting version from node "`+missing+`"`) {
			t.Errorf("server-side health with a missing node: err %v, stderr:\n%s", err, errOut)
		}

		// Only control planes run it (machinehelper.CheckControlplane).
		if _, errOut, err := x.exec(t, ep, w.addr(), "health"); err == nil ||
			!strings.Contains(errOut, "code = Unimplemented desc = cluster health check is only available on control plane nodes") {
			t.Errorf("server-side health on a worker: err %v, stderr:\n%s", err, errOut)
		}
	})

	t.Run("containers", func(t *testing.T) {
		mustRow(t, "system", on(t, cp, "containers"), "system", "apid", "RUNNING")
		// After health, so the workloads run. CRI's k8s.io namespace: a
		// sandbox (the pause image) and the containers of each pod the
		// kubelet runs, static and scheduled.
		out := on(t, cp, "containers", "-k")
		mustRow(t, "static pod sandbox", out, "k8s.io", "kube-system/kube-apiserver-cp1", sandboxImage, "SANDBOX_READY")
		podRow(t, out, "kube-system/kube-apiserver-cp1:kube-apiserver:")

		out = on(t, w, "containers", "-k")
		proxy := podRow(t, out, "kube-system/kube-proxy-", ":kube-proxy:")
		podRow(t, out, "kube-system/kube-flannel-", ":kube-flannel:")

		// logs -k: the container's CRI log; kube-apiserver's is the real
		// apiserver's output, the others' one line (no process runs).
		contains(t, "logs -k kube-apiserver", on(t, cp, "logs", "-k", "kube-system/kube-apiserver-cp1:kube-apiserver", "--tail", "5"), " stderr F ")
		contains(t, "logs -k kube-proxy", on(t, w, "logs", "-k", proxy), " stdout F lab: container \"kube-proxy\"", "runs no process")

		if out, errOut, err := x.exec(t, ep, w.addr(), "logs", "-k", "kube-system/kube-apiserver-cp1:kube-apiserver"); err == nil ||
			!strings.Contains(out+errOut, `container "kube-system/kube-apiserver-cp1:kube-apiserver" not found`) {
			t.Errorf("logs -k of a container the node does not run: err %v, output:\n%s%s", err, out, errOut)
		}

		if strings.Contains(out, "kube-apiserver") {
			t.Errorf("a worker runs no control plane pods:\n%s", out)
		}
	})

	// Calls a real node implements and the lab does not (README, "Calls a
	// real node implements but the lab does not") answer as a gRPC server
	// without the method: Unimplemented, "method X not implemented".
	t.Run("unsimulated calls", func(t *testing.T) {
		for _, c := range []struct {
			args   []string
			method string
		}{{[]string{"list", "/"}, "List"}, {[]string{"stats"}, "Stats"}, {[]string{"processes"}, "Processes"}, {[]string{"mounts"}, "Mounts"}} {
			out, errOut, err := x.exec(t, ep, cp.addr(), c.args...)
			if want := "code = Unimplemented desc = method " + c.method + " not implemented"; err == nil || !strings.Contains(out+errOut, want) {
				t.Errorf("talosctl %s: err %v, want %q in the output:\n%s%s", strings.Join(c.args, " "), err, want, out, errOut)
			}
		}
	})

	cfgFile := filepath.Join(t.TempDir(), "cp.yaml")
	if err := os.WriteFile(cfgFile, tc.cpConfig, 0o600); err != nil {
		t.Fatal(err)
	}

	labelled := filepath.Join(t.TempDir(), "cp-labelled.yaml")
	if err := os.WriteFile(labelled, []byte(replaceOnce("machine:\n", "machine:\n    sysctls:\n        net.core.somaxconn: \"65535\"\n")(string(tc.cpConfig))), 0o600); err != nil {
		t.Fatal(err)
	}

	withEnv := filepath.Join(t.TempDir(), "w-env.yaml")
	if err := os.WriteFile(withEnv, []byte(replaceOnce("machine:\n", "machine:\n    env:\n        LAB_APPLY: \"1\"\n")(string(tc.wConfig))), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("apply-config", func(t *testing.T) {
		// talosctl prints the node's answer (mode details) on stderr.
		apply := func(args ...string) string {
			_, errOut := x.runBoth(t, ep, cp.addr(), append([]string{"apply-config"}, args...)...)

			return errOut
		}

		contains(t, "dry run", apply("--file", cfgFile, "--dry-run"), "Dry run summary:", "No changes.")
		contains(t, "dry run with a change", apply("--file", labelled, "--dry-run"), "Dry run summary:", "net.core.somaxconn")
		contains(t, "no-reboot", apply("--file", labelled, "--mode", "no-reboot"), "Applied configuration without a reboot")
		contains(t, "staged", apply("--file", cfgFile, "--mode", "staged"), "Staged configuration to be applied after the next reboot")
		contains(t, "try", apply("--file", labelled, "--mode", "try", "--timeout", "10m"), "automatically reverted back in 10m0s")
		contains(t, "auto", apply("--file", cfgFile), "Applied configuration without a reboot")

		// auto with a change only a reboot applies (machine.env): the node
		// says so, with the diff, and reboots.
		before := on(t, w, "read", "/proc/sys/kernel/random/boot_id")
		_, errOut := x.runBoth(t, ep, w.addr(), "apply-config", "--file", withEnv)
		contains(t, "auto with a reboot", errOut, "Applied configuration with a reboot: this config change can't be applied in immediate mode", "LAB_APPLY")
		waitFor(t, "w1 rebooted by apply-config", func() bool {
			after, _, err := x.exec(t, ep, w.addr(), "read", "/proc/sys/kernel/random/boot_id")

			return err == nil && after != before && w.node.Status().Phase == PhaseRunning
		})
	})

	t.Run("reboot", func(t *testing.T) {
		before := on(t, w, "read", "/proc/sys/kernel/random/boot_id")

		_, errOut, err := x.exec(t, ep, w.addr(), "reboot")
		if err != nil {
			t.Fatalf("reboot: %v\n%s", err, errOut)
		}

		contains(t, "reboot progress", errOut, "waiting for actor ID", "events check condition met", "post check passed")

		if after := on(t, w, "read", "/proc/sys/kernel/random/boot_id"); after == before {
			t.Errorf("boot ID %q did not change across the reboot", after)
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		target := "v1.12.6"
		image := "factory.talos.dev/nocloud-installer/" + qgaID + ":" + target

		out, errOut, err := x.exec(t, ep, w.addr(), "upgrade", "--image", image)
		if err != nil {
			t.Fatalf("upgrade: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
		}

		contains(t, "upgrade progress", errOut, "New upgrade API is not available, falling back to legacy", "post check passed")
		contains(t, "version after upgrade", on(t, w, "version"), "Tag:         "+target)
	})
}

// TestTalosctlMaintenance: `talosctl get disks --insecure` on a node in
// maintenance mode. talosctl 1.14 first asks each node's version; a 1.12
// node refuses Version in maintenance mode, so the command fails exactly as
// against a real 1.12 node, and works against a 1.13+ node.
func TestTalosctlMaintenance(t *testing.T) {
	x := &talosctl{bin: talosctlBin(t), config: filepath.Join(t.TempDir(), "none"), home: t.TempDir()}
	s, _ := newSim(t)
	ip := addressBlock()

	old := newVM("old", ip(31), "scsi0")
	old.start(s)

	current := newVM("current", ip(32), "virtio0")
	current.m.CDROM = strings.ReplaceAll(isoURL, testVersion, "v1.14.1")
	current.start(s)

	waitPhase(t, old.node, PhaseMaintenance)
	waitPhase(t, current.node, PhaseMaintenance)

	_, errOut, err := x.exec(t, old.addr(), old.addr(), "get", "disks", "--insecure")
	if err == nil || !strings.Contains(errOut, "error getting server version: rpc error: code = Unimplemented desc = API is not implemented in maintenance mode") {
		t.Errorf("get disks --insecure on a 1.12 node: err %v, stderr:\n%s", err, errOut)
	}

	out := x.run(t, current.addr(), current.addr(), "get", "disks", "--insecure")
	mustRow(t, "disks", out, "Disk", "vda", "22", "GB", "virtio")

	if _, ok := row(out, "SystemDisk"); ok {
		t.Errorf("a live ISO boot has no system disk:\n%s", out)
	}
}

// podRow returns the ID of the first CONTAINER_RUNNING row (talosctl
// prefixes a pod's containers with a tree branch) that holds every part, and
// fails without one.
func podRow(t *testing.T, out string, parts ...string) string {
	t.Helper()

	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if !slices.Contains(f, "CONTAINER_RUNNING") {
			continue
		}

		id := slices.IndexFunc(f, func(s string) bool { return strings.HasPrefix(s, "kube-system/") })
		if id < 0 {
			continue
		}

		all := true
		for _, p := range parts {
			all = all && strings.Contains(f[id], p)
		}

		if all {
			return f[id]
		}
	}

	t.Errorf("no running container with %q:\n%s", parts, out)

	return ""
}
