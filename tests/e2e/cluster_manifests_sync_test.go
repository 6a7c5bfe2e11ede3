package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// inlineManifestsFlow renders name, contents pairs as the YAML (JSON) flow
// list of inlineManifests.
func inlineManifestsFlow(t *testing.T, pairs ...string) string {
	t.Helper()
	var list []map[string]string
	for i := 0; i+1 < len(pairs); i += 2 {
		list = append(list, map[string]string{"name": pairs[i], "contents": pairs[i+1]})
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func e2eConfigMap(name, level string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: kube-system\ndata:\n  level: %q\n", name, level)
}

// An edited inline manifest reaches the cluster without a Kubernetes
// upgrade, as `talosctl upgrade-k8s` to the same version would bring it
// (Talos itself only creates missing objects): the preview names the
// objects the sync creates, changes and prunes, and the up does it.
func TestClusterSyncsEditedInlineManifests(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	prog := l.program(1, 1)
	prog.TalosVersion, prog.KubernetesVersion = "v1.14.1", "v1.37.0"
	prog.InlineManifests = inlineManifestsFlow(t, "app", e2eConfigMap("app", "1"), "old", e2eConfigMap("old", "1"))
	p := harness.NewYAMLProject(t, env, "manifests", prog.render(t))
	p.ConfigureLab(t, l.conn)

	tcTimed(t, "create", func() harness.Result { return p.Up(t) })
	kc := []byte(tcReadOutputs(t, p).Kubeconfig)
	// Talos creates the manifests' objects after bootstrap, on its own time.
	waitConfigMap(t, kc, "app", `"1"`)
	waitConfigMap(t, kc, "old", `"1"`)

	prog.InlineManifests = inlineManifestsFlow(t, "app", e2eConfigMap("app", "2"), "extra", e2eConfigMap("new", "1"))
	p.WriteProgram(t, "manifests", prog.render(t))
	pre := tcTimed(t, "preview the edit", func() harness.Result { return p.Preview(t, "--diff") })
	for _, want := range []string{
		"cluster e2e: after the update, the bootstrap manifests are synced as talosctl upgrade-k8s does",
		"creates 1 (ConfigMap kube-system/new)", "changes 1 (ConfigMap kube-system/app)", "prunes 1 (ConfigMap kube-system/old)",
		"bootstrapManifests",
	} {
		if !strings.Contains(pre.Output(), want) {
			t.Errorf("the preview does not say %q:\n%s", want, pre.Output())
		}
	}

	tcTimed(t, "up the edit", func() harness.Result { return p.Up(t) })
	if level, status, err := configMapLevel(kc, "app"); err != nil || status != http.StatusOK || level != "2" {
		t.Errorf("ConfigMap kube-system/app after the up: level %q (HTTP %d, %v), want \"2\"", level, status, err)
	}
	if level, status, err := configMapLevel(kc, "new"); err != nil || status != http.StatusOK || level != "1" {
		t.Errorf("ConfigMap kube-system/new after the up: level %q (HTTP %d, %v), want \"1\"", level, status, err)
	}
	if _, status, err := configMapLevel(kc, "old"); err != nil || status != http.StatusNotFound {
		t.Errorf("ConfigMap kube-system/old after the up: HTTP %d (%v), want 404 (pruned)", status, err)
	}
	tcTimed(t, "preview after", func() harness.Result { return p.Preview(t, "--expect-no-changes") })
}

// configMapLevel reads data.level of a kube-system ConfigMap.
func configMapLevel(kubeconfig []byte, name string) (string, int, error) {
	client, server, err := kube.Client(kubeconfig)
	if err != nil {
		return "", 0, err
	}
	resp, err := client.Get(strings.TrimSuffix(server, "/") + "/api/v1/namespaces/kube-system/configmaps/" + name)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, nil
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(body, &cm); err != nil {
		return "", resp.StatusCode, err
	}
	return cm.Data["level"], resp.StatusCode, nil
}

// waitConfigMap waits until a ConfigMap's level is want (quoted); the
// bound only keeps a broken lab from hanging the test.
func waitConfigMap(t *testing.T, kubeconfig []byte, name, want string) {
	t.Helper()
	var last string
	for range 600 {
		level, _, err := configMapLevel(kubeconfig, name)
		if err == nil && fmt.Sprintf("%q", level) == want {
			return
		}
		last = fmt.Sprintf("level %q, %v", level, err)
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("ConfigMap kube-system/%s never had level %s: %s", name, want, last)
}
