package talos

import (
	"encoding/json"
	"testing"
	"time"
)

func jsonObj(t *testing.T, s string) obj {
	t.Helper()

	var o obj
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		t.Fatal(err)
	}

	return o
}

func TestUnfit(t *testing.T) {
	t.Parallel()

	cp := `{"metadata":{"name":"cp1","labels":{"kubernetes.io/os":"linux","kubernetes.io/arch":"amd64"}},
		"spec":{"taints":[{"key":"node-role.kubernetes.io/control-plane","effect":"NoSchedule"}]}}`
	cordoned := `{"metadata":{"name":"w1","labels":{"kubernetes.io/os":"linux"}},"spec":{"unschedulable":true,
		"taints":[{"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule"}]}}`
	plain := `{"metadata":{"name":"w2","labels":{"kubernetes.io/os":"linux","disk":"ssd"}},"spec":{}}`

	for _, tt := range []struct {
		name, pod, node string
		daemon          bool
		want            string
	}{
		{"no toleration", `{"spec":{}}`, cp, false, "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"},
		{"key toleration", `{"spec":{"tolerations":[{"key":"node-role.kubernetes.io/control-plane","operator":"Exists","effect":"NoSchedule"}]}}`, cp, false, ""},
		{"tolerate all NoSchedule", `{"spec":{"tolerations":[{"operator":"Exists","effect":"NoSchedule"}]}}`, cp, false, ""},
		{"Equal needs the value", `{"spec":{"tolerations":[{"key":"node-role.kubernetes.io/control-plane","value":"x","effect":"NoSchedule"}]}}`, cp, false, "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"},
		{"cordoned", `{"spec":{}}`, cordoned, false, "node(s) were unschedulable"},
		{"daemon on cordoned", `{"spec":{}}`, cordoned, true, ""},
		{"selector", `{"spec":{"nodeSelector":{"disk":"ssd"}}}`, plain, false, ""},
		{"selector misses", `{"spec":{"nodeSelector":{"disk":"hdd"}}}`, plain, false, "node(s) didn't match Pod's node affinity/selector"},
		{"affinity In", `{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/os","operator":"In","values":["linux"]}]}]}}}}}`, plain, false, ""},
		{"affinity NotIn", `{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"disk","operator":"NotIn","values":["ssd"]}]}]}}}}}`, plain, false, "node(s) didn't match Pod's node affinity/selector"},
		{"matchFields", `{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["w2"]}]}]}}}}}`, plain, false, ""},
	} {
		if got := unfit(jsonObj(t, tt.pod), jsonObj(t, tt.node), tt.daemon); got != tt.want {
			t.Errorf("%s: unfit = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestTemplateHash(t *testing.T) {
	t.Parallel()

	a, b := templateHash(obj{"x": 1}), templateHash(obj{"x": 2})
	if a == b || a != templateHash(obj{"x": 1}) {
		t.Fatalf("hashes %q %q: want stable and distinct", a, b)
	}

	for _, c := range a {
		if !(c >= 'b' && c <= 'z' || c >= '2' && c <= '9') {
			t.Fatalf("hash %q has %q, outside the safe alphabet", a, c)
		}
	}
}

func TestKlogTime(t *testing.T) {
	t.Parallel()

	ref := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)

	got := klogTime("I1128 05:40:01.250000       1 server.go:1] started", ref)
	if want := time.Date(2026, 11, 28, 5, 40, 1, 250000000, time.UTC); !got.Equal(want) {
		t.Fatalf("klogTime = %v, want %v", got, want)
	}

	if got := klogTime("not a klog line", ref); !got.Equal(ref) {
		t.Fatalf("klogTime of a plain line = %v, want the reference", got)
	}
}
