package cluster

import (
	"fmt"
	"strings"
	"testing"

	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

func secret(s string) presource.PropertyValue { return presource.MakeSecret(presource.NewProperty(s)) }

// A secret patch and secret registry credentials are accepted (the SDK
// refused to copy a secret into a plain field), reach the machine
// configurations, and nothing else the component registers holds them in
// plain text; each ConfigurationApply gets them as secret sensitiveValues.
func TestSecretPatchAndRegistryAuth(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	in["patches"] = []any{secret("machine:\n  env:\n    UPSTREAM_KEY: patch-s3cr3t-value\n")}
	in["registryMirrors"] = map[string]any{"docker.io": map[string]any{
		"endpoints": []any{"https://mirror.example.com:5000"},
		"auth":      map[string]any{"username": "puller", "password": secret("mirror-s3cr3t-pass")},
	}}
	rec, resp, err := construct(t, &fakeInventory{hosts: threeHosts()}, in)
	must(t, err)
	a := rec.get(t, "ConfigurationApply", "lab-workers-1").inputs
	cfg := a.Get("machineConfiguration")
	for _, want := range []string{"UPSTREAM_KEY: patch-s3cr3t-value", "mirror.example.com:5000:", "password: mirror-s3cr3t-pass", "username: puller"} {
		if !cfg.Secret() || !strings.Contains(cfg.AsString(), want) {
			t.Errorf("worker configuration (secret=%v) lacks %q", cfg.Secret(), want)
		}
	}
	sv := a.Get("sensitiveValues")
	if !sv.Secret() || !strings.Contains(fmt.Sprint(sv), "patch-s3cr3t-value") || !strings.Contains(fmt.Sprint(sv), "mirror-s3cr3t-pass") {
		t.Errorf("sensitiveValues = %v", sv)
	}
	for _, r := range rec.regs {
		if r.typ == "ConfigurationApply" {
			continue
		}
		if s := fmt.Sprint(r.inputs); strings.Contains(s, "s3cr3t") {
			t.Errorf("%s carries a secret in plain text", r.key())
		}
	}
	if s := fmt.Sprint(resp.State); strings.Contains(s, "s3cr3t") {
		t.Errorf("the component's outputs carry a secret: %s", s)
	}
}

// A secret where the plan needs the value (it would be written in plain
// text into Proxmox) is refused by path; an error quoting a secret patch
// does not show it.
func TestSecretInputsRefusedWhereThePlanNeedsThem(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	in["clusterName"] = secret("lab")
	in["network"].(map[string]any)["bridge"] = secret("vmbr9")
	_, _, err := construct(t, &fakeInventory{hosts: threeHosts()}, in)
	if err == nil || !strings.Contains(err.Error(), "clusterName, network.bridge are a secret") || !strings.Contains(err.Error(), "pass them as a plain value") {
		t.Fatalf("secret clusterName and bridge: %v", err)
	}

	in = baseInputs()
	in["registryMirrors"] = map[string]any{"docker.io": map[string]any{
		"endpoints": []any{"https://mirror.example.com"},
		"auth":      map[string]any{"password": secret("lonely-s3cr3t")},
	}}
	in["patches"] = []any{secret("machine:\n  notAField: hidden-s3cr3t-value\n")}
	_, _, err = construct(t, &fakeInventory{hosts: threeHosts()}, in)
	if err == nil || !strings.Contains(err.Error(), `registryMirrors["docker.io"].auth.username: a password is set without a username`) {
		t.Fatalf("password without user: %v", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("the error shows a secret: %v", err)
	}
}

// A patch or mirror endpoint that is another resource's output not known
// in a preview is planned with a placeholder: the preview succeeds, says
// why, and every node's machine configuration is unknown (changes once
// known). What the plan needs stays refused (TestConstructRefusesUnknownInputs).
func TestUnknownConfigInputsInPreview(t *testing.T) {
	t.Parallel()
	unknown := presource.MakeComputed(presource.NewStringProperty(""))
	in := baseInputs()
	in["patches"] = []any{"machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n", unknown}
	in["workerPatches"] = unknown
	in["registryMirrors"] = map[string]any{"docker.io": map[string]any{"endpoints": []any{unknown}}}
	rec, resp, err := constructDry(t, true, &fakeInventory{hosts: threeHosts()}, in)
	must(t, err)
	cfg := rec.get(t, "ConfigurationApply", "lab-cp-1").inputs.Get("machineConfiguration")
	if !cfg.IsComputed() || !cfg.Secret() {
		t.Errorf("machine configuration with an unknown patch = %v, want unknown and secret", cfg)
	}
	if vms := rec.byType("VirtualMachine"); len(vms) != 5 {
		t.Errorf("%d VMs planned", len(vms))
	}
	w := fmt.Sprint(resp.State.Get("warnings"))
	if !strings.Contains(w, `patches[1], registryMirrors["docker.io"].endpoints[0], workerPatches are not known until`) {
		t.Errorf("warnings = %s", w)
	}
}

// Issue 15, secrets anywhere: every input that only reaches the machine
// configurations may be a secret (manifests and their URLs, CNI manifests,
// the CCM manifests, the GitOps install manifests and repository URL); each
// reaches the configurations, is handed to every ConfigurationApply as a
// secret sensitive value, and no other child nor the component's outputs
// hold it in plain text.
func TestEverySecretCapableInputStaysSecret(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	in["extraManifests"] = []any{secret("https://git.example.com/s3cr3t-extra/manifest.yaml")}
	in["inlineManifests"] = []any{map[string]any{"name": "creds", "contents": secret("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  token: inline-s3cr3t-token\n")}}
	in["cni"] = map[string]any{"name": "custom", "manifestUrls": []any{secret("https://git.example.com/s3cr3t-cni/cni.yaml")}}
	in["cloudControllerManager"] = map[string]any{"talosCcmManifest": secret("https://git.example.com/s3cr3t-ccm/ccm.yaml")}
	in["gitOps"] = map[string]any{
		"tool":             "flux",
		"installManifests": []any{secret("https://git.example.com/s3cr3t-flux/install.yaml")},
		"repository":       map[string]any{"url": secret("https://deploy:s3cr3t-git-token@git.example.com/fleet.git")},
	}
	rec, resp, err := construct(t, &fakeInventory{hosts: threeHosts()}, in)
	must(t, err)
	a := rec.get(t, "ConfigurationApply", "lab-cp-1").inputs
	cfg := a.Get("machineConfiguration")
	for _, want := range []string{"s3cr3t-extra", "inline-s3cr3t-token", "s3cr3t-cni", "s3cr3t-ccm", "s3cr3t-flux", "s3cr3t-git-token"} {
		if !cfg.Secret() || !strings.Contains(cfg.AsString(), want) {
			t.Errorf("control plane configuration (secret=%v) lacks %q", cfg.Secret(), want)
		}
	}
	if sv := a.Get("sensitiveValues"); !sv.Secret() || !strings.Contains(fmt.Sprint(sv), "s3cr3t-git-token") {
		t.Errorf("sensitiveValues = %v", sv)
	}
	for _, r := range rec.regs {
		if r.typ == "ConfigurationApply" {
			continue
		}
		if s := fmt.Sprint(r.inputs); strings.Contains(s, "s3cr3t") {
			t.Errorf("%s carries a secret in plain text", r.key())
		}
	}
	if s := fmt.Sprint(resp.State); strings.Contains(s, "s3cr3t") {
		t.Errorf("the component's outputs carry a secret: %s", s)
	}
}
