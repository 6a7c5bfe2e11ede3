package talosconfig

import (
	"reflect"
	"strings"
	"testing"
)

func TestClassifyChange(t *testing.T) {
	t.Parallel()
	gen := func(mutate func(*Input), patches ...string) string {
		in := baseInput(t, "v1.12.5", RoleWorker, patches...)
		if mutate != nil {
			mutate(&in)
		}
		return mustGenerate(t, in)
	}
	base := gen(nil)
	for _, tc := range []struct {
		name        string
		new         string
		reboot      bool
		rebootPaths []string
		upgrade     bool
	}{
		{name: "no change", new: base},
		{name: "node label", new: gen(nil, "machine:\n  nodeLabels:\n    zone: a\n")},
		{name: "kubelet argument", new: gen(nil, "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n")},
		{name: "registry mirror", new: gen(nil, "machine:\n  registries:\n    mirrors:\n      docker.io:\n        endpoints: [\"https://mirror.lab\"]\n")},
		{name: "kubernetes version", new: gen(func(in *Input) { in.KubernetesVersion = "1.34.1" })},
		{name: "sysctl", new: gen(nil, "machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n")},
		{name: "VIP document", new: gen(nil, "apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 192.168.1.220\nlink: eth0\n")},
		{name: "cluster section", new: gen(nil, "cluster:\n  allowSchedulingOnControlPlanes: true\n")},
		{name: "install image", new: gen(func(in *Input) {
			in.InstallImage = strings.Replace(in.InstallImage, "v1.12.5", "v1.12.6", 1)
		}), upgrade: true},
		{name: "environment", new: gen(nil, "machine:\n  env:\n    https_proxy: http://proxy.lab:3128\n"),
			reboot: true, rebootPaths: []string{"machine.env"}},
		{name: "files", new: gen(nil, "machine:\n  files:\n    - content: x\n      permissions: 0o644\n      path: /var/etc/x\n      op: create\n"),
			reboot: true, rebootPaths: []string{"machine.files"}},
		{name: "disk quota feature", new: gen(nil, "machine:\n  features:\n    diskQuotaSupport: false\n"),
			reboot: true, rebootPaths: []string{"machine.features.diskQuotaSupport"}},
		{name: "live and reboot together", new: gen(nil, "machine:\n  nodeLabels:\n    zone: a\n  env:\n    A: b\n"),
			reboot: true, rebootPaths: []string{"machine.env"}},
	} {
		ch, err := ClassifyChange(base, tc.new)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ch.Reboot != tc.reboot || !reflect.DeepEqual(ch.RebootPaths, tc.rebootPaths) || ch.Upgrade != tc.upgrade {
			t.Errorf("%s: reboot %v %q upgrade %v; want reboot %v %q upgrade %v (changed %q)",
				tc.name, ch.Reboot, ch.RebootPaths, ch.Upgrade, tc.reboot, tc.rebootPaths, tc.upgrade, ch.Changed)
		}
		if (tc.name == "no change") != (len(ch.Changed) == 0) {
			t.Errorf("%s: changed paths %q", tc.name, ch.Changed)
		}
		if tc.upgrade && !strings.HasSuffix(ch.NewImage, ":v1.12.6") {
			t.Errorf("%s: new image %q", tc.name, ch.NewImage)
		}
	}
	if _, err := ClassifyChange(base, "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n"); err == nil {
		t.Errorf("a configuration without v1alpha1 was classified")
	}
}
