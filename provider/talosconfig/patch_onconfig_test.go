package talosconfig

import (
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

// A strategic merge on the parsed base gives, without normalize, the text
// the same patch gives on the base's text (parsed, merged, normalized): the
// canonical form every step has. It holds because configpatcher answers a
// merge on a parsed configuration with that configuration encoded without
// comments (machinery v1.13.9 config/configpatcher/apply.go:28,
// configOrBytes.Bytes: EncodeBytes(encoder.WithComments(CommentsDisabled))),
// which is what normalize writes; these patches cover the kinds of value
// and document where an encoding could differ: comments in the patch,
// several documents, other document kinds, `$patch: delete`, floats,
// durations, sizes, lists of argument values, nested maps.
func TestStrategicPatchOnParsedBaseIsNormalized(t *testing.T) {
	t.Parallel()
	patches := []struct {
		name, text string
		only112    bool // documents the 1.11 contract has not
	}{
		{"kubelet extraArgs", "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n", false},
		{"multi-document", "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: cp-1\n---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 192.168.1.220\nlink: eth0\n", true},
		{"delete a document", "apiVersion: v1alpha1\nkind: HostnameConfig\n$patch: delete\n", true},
		{"empty lists and maps", "machine:\n  network:\n    interfaces: []\n  nodeLabels: {}\n  install:\n    extraKernelArgs: [console=ttyS0]\ncluster:\n  apiServer:\n    certSANs: []\n", false},
		{"comments", "# why: more pods\nmachine:\n  sysctls:\n    net.core.somaxconn: \"65535\" # a comment after a value\n    # a comment line\n    vm.max_map_count: \"262144\"\n", false},
		{"kubelet extraConfig", "machine:\n  kubelet:\n    extraConfig:\n      imageGCHighThresholdPercent: 85\n      cpuCFSQuotaPeriod: 100ms\n      shutdownGracePeriod: 30s\n      memoryThrottlingFactor: 0.8\n      evictionHard:\n        memory.available: 100Mi\n        nodefs.available: 10%\n", false},
		{"extraArgs as lists", "cluster:\n  apiServer:\n    extraArgs:\n      feature-gates: [A=true, B=false]\n      audit-log-maxage: \"30\"\n", false},
		{"delete in a map", "machine:\n  features:\n    hostDNS:\n      $patch: delete\n", false},
		{"durations and sizes", "machine:\n  install:\n    diskSelector:\n      size: \">= 10GB\"\ncluster:\n  adminKubeconfig:\n    certLifetime: 8760h0m0s\n", false},
		{"files and manifests", "machine:\n  files:\n    - path: /var/etc/x.conf\n      op: create\n      permissions: 0o644\n      content: |\n        a = 1\ncluster:\n  inlineManifests:\n    - name: ns\n      contents: |\n        apiVersion: v1\n        kind: Namespace\n        metadata:\n          name: x\n", false},
		{"interface by device selector", "machine:\n  network:\n    interfaces:\n      - deviceSelector:\n          hardwareAddr: \"bc:24:11:*\"\n        dhcp: false\n        addresses: [192.168.1.10/24]\n        mtu: 1500\n", false},
		{"other document kinds", "apiVersion: v1alpha1\nkind: ExtensionServiceConfig\nname: nut-client\nconfigFiles:\n  - content: MONITOR x\n    mountPath: /usr/local/etc/nut/upsmon.conf\n---\napiVersion: v1alpha1\nkind: UserVolumeConfig\nname: data\nprovisioning:\n  diskSelector:\n    match: disk.transport == \"nvme\"\n  minSize: 10GiB\n  maxSize: 50GiB\n---\napiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: kubelet\nportSelector:\n  ports: [10250]\n  protocol: tcp\ningress:\n  - subnet: 192.168.1.0/24\n---\napiVersion: v1alpha1\nkind: TrustedRootsConfig\nname: corp\ncertificates: |\n  -----BEGIN CERTIFICATE-----\n  MIIB\n  -----END CERTIFICATE-----\n", false},
	}
	for _, version := range []string{"v1.12.5", "v1.11.5"} {
		for _, role := range []Role{RoleControlPlane, RoleWorker} {
			base := mustGenerate(t, baseInput(t, version, role))
			parsed, err := configloader.NewFromBytes([]byte(base))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range patches {
				if version == "v1.11.5" && p.only112 {
					continue
				}
				fromBytes, err := applyPatch([]byte(base), nil, p.text)
				if err != nil {
					t.Fatalf("%s %s patch %q on the text: %v", version, role, p.name, err)
				}
				onParsed, err := applyPatch([]byte(base), parsed, p.text)
				if err != nil {
					t.Fatalf("%s %s patch %q on the parsed base: %v", version, role, p.name, err)
				}
				if string(onParsed) != string(fromBytes) {
					t.Errorf("%s %s patch %q: on the parsed base\n%s\non the text\n%s", version, role, p.name, onParsed, fromBytes)
				}
				if string(onParsed) == base {
					t.Errorf("%s %s patch %q changed nothing: it tests nothing", version, role, p.name)
				}
			}
		}
	}
}
