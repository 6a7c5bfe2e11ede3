package talosconfig

import (
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

// A strategic merge on the parsed base gives, without normalize, the text
// the same patch gives on the base's text (parsed, merged, normalized): the
// canonical form every step has.
func TestStrategicPatchOnParsedBaseIsNormalized(t *testing.T) {
	t.Parallel()
	patches := []string{
		"machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n",
		"apiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: cp-1\n---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 192.168.1.220\nlink: eth0\n",
		"apiVersion: v1alpha1\nkind: HostnameConfig\n$patch: delete\n",
		"machine:\n  network:\n    interfaces: []\n  nodeLabels: {}\n  install:\n    extraKernelArgs: [console=ttyS0]\ncluster:\n  apiServer:\n    certSANs: []\n",
	}
	for _, version := range []string{"v1.12.5", "v1.11.5"} {
		for _, role := range []Role{RoleControlPlane, RoleWorker} {
			base := mustGenerate(t, baseInput(t, version, role))
			parsed, err := configloader.NewFromBytes([]byte(base))
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range patches {
				if version == "v1.11.5" && i > 0 {
					continue // documents of 1.12
				}
				fromBytes, err := applyPatch([]byte(base), nil, p)
				if err != nil {
					t.Fatalf("%s %s patch %d on the text: %v", version, role, i+1, err)
				}
				onParsed, err := applyPatch([]byte(base), parsed, p)
				if err != nil {
					t.Fatalf("%s %s patch %d on the parsed base: %v", version, role, i+1, err)
				}
				if string(onParsed) != string(fromBytes) {
					t.Errorf("%s %s patch %d: on the parsed base\n%s\non the text\n%s", version, role, i+1, onParsed, fromBytes)
				}
			}
		}
	}
}
