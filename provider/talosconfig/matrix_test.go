package talosconfig

import (
	"fmt"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

// Every Talos minor × every Kubernetes minor its support matrix names ×
// role × the runtime mode nodes run in (metal: booted from the ISO and
// installed; cloud: cloned from an installed disk image) generates a
// configuration that machinery's own validator accepts (Generate validates
// in in.Mode) and whose contract is never newer than the node. The
// Kubernetes minors just outside each range are refused, naming the range.
func TestSupportMatrix(t *testing.T) {
	t.Parallel()
	for minor := uint64(minTalosMinor); minor <= maxTalosMinor; minor++ {
		talos := newestPatch[minor]
		t.Run(talos, func(t *testing.T) {
			t.Parallel()
			k8sMinors := KubernetesMinors(minor)
			if len(k8sMinors) < 2 {
				t.Fatalf("Talos %s: support matrix %v", talos, k8sMinors)
			}
			bundle := testBundle(t, talos)
			for _, k := range k8sMinors {
				for _, role := range []Role{RoleControlPlane, RoleWorker} {
					for _, mode := range []RuntimeMode{Metal, Cloud} {
						in := baseInput(t, talos, role)
						in.Secrets = bundle
						in.KubernetesVersion = fmt.Sprintf("1.%d.0", k)
						in.Mode = mode
						res, err := Generate(in)
						if err != nil {
							t.Errorf("Talos %s, Kubernetes %s, %s, %s: %v", talos, in.KubernetesVersion, role, mode.name, err)
							continue
						}
						cfg, err := configloader.NewFromBytes([]byte(res.Config))
						if err != nil {
							t.Fatal(err)
						}
						if got := cfg.Machine().Kubelet().Image(); !strings.HasSuffix(got, ":v"+in.KubernetesVersion) {
							t.Errorf("Talos %s, Kubernetes %s, %s: kubelet image %s", talos, in.KubernetesVersion, role, got)
						}
						want, _ := VersionContract(talos)
						if !strings.Contains(res.Config, "version: v1alpha1") || want.Greater(contractOf(t, talos)) {
							t.Errorf("Talos %s: contract %s newer than the node", talos, want)
						}
					}
				}
			}
			for _, k := range []uint64{k8sMinors[0] - 1, k8sMinors[len(k8sMinors)-1] + 1} {
				err := CheckKubernetesVersion(talos, fmt.Sprintf("1.%d.0", k))
				wantRange := fmt.Sprintf("runs Kubernetes 1.%d to 1.%d", k8sMinors[0], k8sMinors[len(k8sMinors)-1])
				if err == nil || !strings.Contains(err.Error(), wantRange) || !strings.Contains(err.Error(), "defaults to "+defaultKubernetes[minor]) {
					t.Errorf("Talos %s, Kubernetes 1.%d: %v; want a refusal naming %q and the default", talos, k, err, wantRange)
				}
			}
		})
	}
}

// contractOf is the contract a node running talos accepts: its own minor.
func contractOf(t *testing.T, talos string) *config.VersionContract {
	t.Helper()
	v, err := ParseVersion(talos)
	if err != nil {
		t.Fatal(err)
	}
	return &config.VersionContract{Major: int(v.Major), Minor: int(v.Minor)}
}
