package talosconfig

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
	coreconfig "github.com/siderolabs/talos/pkg/machinery/config/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

// nodePatch is a patch like the provider's for one node (plan
// providerDocuments): a v1alpha1 part shared by the role, then the node's
// own documents.
func nodePatch(role Role, i int, multiDoc bool) string {
	name := fmt.Sprintf("lab-%s-%d", role, i)
	mac := fmt.Sprintf("6a:01:d2:19:1c:%02x", i)
	network := ""
	if !multiDoc {
		network = "    network:\n        hostname: " + name + "\n"
		if role == RoleControlPlane {
			network += "        interfaces:\n            - deviceSelector:\n                hardwareAddr: " + mac + "\n              vip:\n                ip: 192.168.1.220\n"
		}
	}
	v1 := "machine:\n" + network + "    kubelet:\n        extraArgs:\n            cloud-provider: external\n            rotate-server-certificates: \"true\"\n" +
		"cluster:\n    externalCloudProvider:\n        enabled: true\n"
	if role == RoleControlPlane {
		v1 += "        manifests:\n            - https://example.com/ccm.yml\n"
	}
	if !multiDoc {
		return v1
	}
	docs := []string{v1, "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: " + name + "\n"}
	if role == RoleControlPlane {
		docs = append(docs,
			"apiVersion: v1alpha1\nkind: LinkAliasConfig\nname: net0\nselector:\n    match: mac(link.permanent_addr) == \""+mac+"\"\n",
			"apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 192.168.1.220\nlink: net0\n")
	}
	return strings.Join(docs, "---\n")
}

// userPatches are patches users write, shared by nodes or not, some of
// which the document path leaves to the slow path.
var userPatches = []string{
	"machine:\n  nodeLabels:\n    zone: a\n",
	"---\nmachine:\n  kubelet:\n    extraArgs:\n      max-pods: \"200\"\n---\n",
	"# only a comment first\nmachine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n",
	"machine:\n  certSANs: []\n  nodeTaints: {}\ncluster:\n  apiServer:\n    extraArgs: {}\n",
	"machine:\n  install:\n    extraKernelArgs:\n      - console=ttyS0\n",
	"apiVersion: v1alpha1\nkind: ResolverConfig\nnameservers:\n  - address: 10.0.0.1\n",
	"cluster:\n  proxy:\n    disabled: true\n---\napiVersion: v1alpha1\nkind: KmsgLogConfig\nname: remote\nurl: udp://10.0.0.9:514/\n",
	"- op: add\n  path: /machine/nodeLabels\n  value:\n    json: patch\n", // JSON6902: slow path
	"machine:\n  nodeLabels:\n    $patch: delete\n",                       // selector: slow path
	"--- \nmachine:\n  nodeLabels:\n    spaced: marker\n",                 // a marker line with more: slow path
	"machine:\n  network:\n    nameservers: [\"10.0.0.1\"]\n",
	invalidPatch,
}

// invalidPatch makes a configuration machinery refuses.
const invalidPatch = "machine:\n  kubelet:\n    nodeIP:\n      validSubnets: [\"10.0.0.0/33\"]\n"

// The document path answers as the slow path does, byte for byte, on
// provider-like and user patches over versions, roles and modes; and it
// answers (ok) for the patches it is meant for, so the comparison is not
// vacuous.
func TestDocumentPathIsTheSlowPath(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 60))
	answered, meant := 0, 0
	for _, version := range []string{"v1.11.5", "v1.12.5", "v1.14.1"} {
		multi := version != "v1.11.5"
		for _, role := range []Role{RoleControlPlane, RoleWorker} {
			for i := range 12 {
				patches := []string{nodePatch(role, i, multi)}
				for range rng.IntN(4) {
					patches = append(patches, userPatches[rng.IntN(len(userPatches))])
				}
				if i == 0 {
					patches = nil
				}
				in := baseInput(t, version, role, patches...)
				if i%3 == 1 {
					in.Mode = Cloud
				}
				mode := in.Mode
				if mode.name == "" {
					mode = Metal
				}
				b, err := baseFor(in, mode)
				if err != nil {
					t.Fatal(err)
				}
				slow, slowErr := generateSlow(in, b, mode)
				final, warnings, ok := generateByDocuments(b, in.Patches, mode, in.TalosVersion)
				if plain(patches) && slowErr == nil {
					meant++
				}
				name := fmt.Sprintf("%s %s node %d patches %q", version, role, i, patches)
				if !ok {
					if plain(patches) && slowErr == nil {
						t.Errorf("%s: the document path did not answer", name)
					}
					continue
				}
				answered++
				if slowErr != nil {
					t.Errorf("%s: the document path answered, the slow path failed: %v", name, slowErr)
					continue
				}
				if final != slow.Config {
					t.Errorf("%s: configurations differ:\n--- slow\n%s\n--- documents\n%s", name, slow.Config, final)
				}
				if !reflect.DeepEqual(warnings, slow.Warnings) {
					t.Errorf("%s: warnings %q, slow path %q", name, warnings, slow.Warnings)
				}
			}
		}
	}
	if answered != meant || meant < 30 {
		t.Errorf("the document path answered %d of 72 times, for %d it is meant for; want equal and at least 30", answered, meant)
	}
}

// plain: patches the document path is meant to answer (no JSON6902, no
// delete selector, no unusual marker line).
func plain(patches []string) bool {
	for _, p := range patches {
		if strings.Contains(p, "op: add") || strings.Contains(p, "$patch") || strings.Contains(p, "--- \n") {
			return false
		}
	}
	return true
}

// A configuration that fails validation is worded by the slow path, with
// the patch to blame, whichever path saw it first.
func TestDocumentPathLeavesFailuresToTheSlowPath(t *testing.T) {
	t.Parallel()
	in := baseInput(t, "v1.12.5", RoleWorker, nodePatch(RoleWorker, 1, true), invalidPatch)
	mode := Metal
	b, err := baseFor(in, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := generateByDocuments(b, in.Patches, mode, in.TalosVersion); ok {
		t.Fatal("the document path answered for an invalid configuration")
	}
	_, err = Generate(in)
	if err == nil || !strings.Contains(err.Error(), "after patch 2 of 2") {
		t.Fatalf("Generate: %v, want the second patch blamed", err)
	}
}

// Documents kept for the process are shared by every configuration built
// from them: nothing (merge, validation, encoding) may change them, or a
// later node would get another node's settings.
func TestSharedDocumentsStayUnchanged(t *testing.T) {
	// not parallel: it reads the process-wide caches
	for _, version := range []string{"v1.11.5", "v1.14.1"} {
		for _, role := range []Role{RoleControlPlane, RoleWorker} {
			for i := range 3 {
				mustGenerate(t, baseInput(t, version, role, nodePatch(role, i, version != "v1.11.5"), userPatches[0], userPatches[5]))
			}
		}
	}
	// every document text the caches know, with what they keep for it
	var texts []docText
	bases.Lock()
	for _, b := range bases.m {
		texts = append(texts, b.docs...)
	}
	bases.Unlock()
	collect := func(_ memo.Key, c cached[docText]) { texts = append(texts, c.v) }
	reencoded.Range(collect)
	mergedDocs.Range(collect)
	var patches []patchDoc
	patchDocCache.Range(func(_ memo.Key, c cached[patchDoc]) {
		if c.ok {
			patches = append(patches, c.v)
		}
	})
	kept := map[string]cached[coreconfig.Document]{}
	for _, d := range texts {
		if c, ok := parsedDocs.Get(d.key); ok && c.ok {
			kept[d.text] = c
		}
	}
	if len(kept) < 10 || len(patches) < 10 {
		t.Fatalf("%d parsed and %d patch documents kept: the document path did not run", len(kept), len(patches))
	}
	for text, c := range kept {
		fresh, err := configloader.NewFromBytes([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := encodeDoc(fresh.Documents()[0])
		if got, err := encodeDoc(c.v); err != nil || got != want {
			t.Errorf("kept document changed:\n%s\nparsed from its text:\n%s", got, want)
		}
	}
	for _, p := range patches {
		if enc, err := encodeDoc(p.doc); err != nil || enc != p.encoded.text {
			t.Errorf("kept patch document %s changed:\n%s\nwas\n%s", p.id, enc, p.encoded.text)
		}
	}
}
