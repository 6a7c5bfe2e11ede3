package talos

import (
	"slices"
	"strings"
	"testing"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

func withInlineManifests(manifests ...string) func(string) string {
	return func(s string) string {
		var b strings.Builder

		b.WriteString("    clusterName: lab\n    inlineManifests:\n")

		for i := 0; i+1 < len(manifests); i += 2 {
			b.WriteString("        - name: " + manifests[i] + "\n          contents: |\n")

			for _, l := range strings.Split(strings.TrimRight(manifests[i+1], "\n"), "\n") {
				b.WriteString("            " + l + "\n")
			}
		}

		return replaceOnce("    clusterName: lab\n", b.String())(s)
	}
}

func configMapYAML(name, level string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: kube-system\ndata:\n  level: \"" + level + "\"\n"
}

// A control plane renders its inline manifests as Manifest resources
// "99-<name>" beside flannel's, kube-proxy's and CoreDNS's, and, as Talos's
// ManifestApplyController, creates the objects that are missing, recording
// them in the inventory `talosctl upgrade-k8s` prunes from; an object that
// exists is not changed when its manifest is (only upgrade-k8s's sync does
// that), and a manifest added later is created.
func TestInlineManifestsAppliedLikeTalos(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1, patch: withInlineManifests("app", configMapYAML("app", "1"))})
	tc.bootstrap(t)

	ctx := ctxT(t)
	c := tc.client(t, tc.cps[0])

	list, err := safe.StateList[*k8s.Manifest](ctx, c.COSI, resource.NewMetadata(k8s.ControlPlaneNamespaceName, k8s.ManifestType, "", resource.VersionUndefined))
	if err != nil {
		t.Fatal(err)
	}

	var ids []string

	for m := range list.All() {
		ids = append(ids, m.Metadata().ID())

		if m.Metadata().ID() == "99-app" && (len(m.TypedSpec().Items) != 1 || m.TypedSpec().Items[0].Object["kind"] != "ConfigMap") {
			t.Errorf("99-app items %+v", m.TypedSpec().Items)
		}
	}

	if !slices.Equal(ids, []string{"05-flannel", "10-kube-proxy", "11-core-dns", "99-app"}) {
		t.Errorf("manifests %v", ids)
	}

	k := newKubectl(t, tc.kubeconfig(t))
	k.eventually(`level: "1"`, "get", "configmap", "-n", "kube-system", "app", "-o", "yaml")
	out := k.eventually(`kube-system_app__ConfigMap`, "get", "configmap", "-n", "kube-system", "talos-bootstrap-manifests-inventory", "-o", "yaml")
	mustMatch(t, "inventory", out, `kube-system_kube-proxy_apps_DaemonSet`)
	mustMatch(t, "app", k.run("", "get", "configmap", "-n", "kube-system", "app", "-o", "yaml"),
		`config.k8s.io/owning-inventory: talos-bootstrap-manifests-inventory`)

	next := configBytes(t, tc.in, mtype.TypeControlPlane, withInlineManifests("app", configMapYAML("app", "2"), "extra", configMapYAML("new", "1")))
	if _, err := c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: next, Mode: machine.ApplyConfigurationRequest_NO_REBOOT}); err != nil {
		t.Fatal(err)
	}

	k.eventually(`kube-system_new__ConfigMap`, "get", "configmap", "-n", "kube-system", "talos-bootstrap-manifests-inventory", "-o", "yaml")
	mustMatch(t, "app after its manifest changed", k.run("", "get", "configmap", "-n", "kube-system", "app", "-o", "yaml"), `level: "1"`)
}
