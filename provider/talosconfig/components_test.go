package talosconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

func TestRetagComponentsChangesOnlyComponentImages(t *testing.T) {
	t.Parallel()
	in := baseInput(t, "v1.12.5", RoleControlPlane,
		"cluster: {apiServer: {image: mirror.example/k8s/kube-apiserver:v1.34.1}}")
	in.KubernetesVersion = "1.34.1"
	old := mustGenerate(t, in)

	out, change, err := RetagComponents([]byte(old), "v1.35.2")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cluster.apiServer.image", "cluster.controllerManager.image", "cluster.scheduler.image", "cluster.proxy.image"}
	if change.From != "v1.34.1" || !slices.Equal(change.Paths, want) {
		t.Errorf("change %+v, want from v1.34.1 with paths %v", change, want)
	}
	cfg, err := configloader.NewFromBytes(out)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cluster()
	if got := c.APIServer().Image(); got != "mirror.example/k8s/kube-apiserver:v1.35.2" {
		t.Errorf("apiServer image %s: the repository (a mirror) must stay, the tag change", got)
	}
	for _, img := range []string{c.ControllerManager().Image(), c.Scheduler().Image(), c.Proxy().Image()} {
		if !strings.HasSuffix(img, ":v1.35.2") {
			t.Errorf("component image %s not moved to v1.35.2", img)
		}
	}
	if got := cfg.Machine().Kubelet().Image(); !strings.HasSuffix(got, ":v1.34.1") {
		t.Errorf("kubelet image %s: it must stay for the second phase", got)
	}

	// Everything but the four images is as before.
	diff, err := ClassifyChange(old, string(out))
	if err != nil {
		t.Fatal(err)
	}
	if diff.Reboot {
		t.Errorf("the component change needs a reboot (%v): it must apply live", diff.RebootPaths)
	}
	for _, p := range diff.Changed {
		if !slices.Contains(want, p) {
			t.Errorf("path %s changed too", p)
		}
	}

	// Already there: nothing to do, same bytes.
	again, change, err := RetagComponents(out, "1.35.2")
	if err != nil || len(change.Paths) != 0 || string(again) != string(out) || change.From != "v1.35.2" {
		t.Errorf("second retag: paths %v from %q err %v (same bytes %v)", change.Paths, change.From, err, string(again) == string(out))
	}
}

func TestRetagComponentsRefuses(t *testing.T) {
	t.Parallel()
	worker := mustGenerate(t, baseInput(t, "v1.12.5", RoleWorker))
	if _, _, err := RetagComponents([]byte(worker), "v1.35.2"); err == nil || !strings.Contains(err.Error(), "not a control plane") {
		t.Errorf("worker: %v", err)
	}
	cp := mustGenerate(t, baseInput(t, "v1.12.5", RoleControlPlane))
	if _, _, err := RetagComponents([]byte(cp), "latest"); err == nil || !strings.Contains(err.Error(), "not a version") {
		t.Errorf("bad version: %v", err)
	}
}
