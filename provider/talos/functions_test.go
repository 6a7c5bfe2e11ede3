package talos

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
)

func configArgs(t *testing.T, extra map[string]property.Value) property.Map {
	args := map[string]property.Value{
		"clusterName":     str("lab"),
		"clusterEndpoint": str("https://192.168.1.220:6443"),
		"machineType":     str("controlplane"),
		"machineSecrets":  property.New(testSecretsYAML(t)).WithSecret(true),
		"talosVersion":    str("v1.12.5"),
		"installImage":    str("factory.talos.dev/nocloud-installer/ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515:v1.12.5"),
	}
	for k, v := range extra {
		args[k] = v
	}
	return property.NewMap(args)
}

func TestGetMachineConfiguration(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	args := configArgs(t, map[string]property.Value{
		"configPatches": strs("apiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: cp-1\n"),
	})
	resp, err := s.Invoke(p.InvokeRequest{Token: configToken, Args: args})
	if err != nil || len(resp.Failures) > 0 {
		t.Fatalf("invoke: %v %v", err, resp.Failures)
	}
	out := resp.Return
	if !out.Get("machineConfiguration").Secret() {
		t.Errorf("machineConfiguration is not secret")
	}
	text := plain(out.Get("machineConfiguration")).AsString()
	cfg, err := configloader.NewFromBytes([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Machine().Install().Disk() != "/dev/sda" {
		t.Errorf("install disk default not applied: %q", cfg.Machine().Install().Disk())
	}
	if cfg.NetworkHostnameConfig().Hostname() != "cp-1" {
		t.Errorf("patch not applied")
	}
	if out.Get("kubernetesVersion").AsString() != "1.35.4" || out.Get("talosVersion").AsString() != "v1.12.5" {
		t.Errorf("versions %v %v", out.Get("kubernetesVersion"), out.Get("talosVersion"))
	}
	again, _ := s.Invoke(p.InvokeRequest{Token: configToken, Args: args})
	if plain(again.Return.Get("machineConfiguration")).AsString() != text {
		t.Errorf("two invocations with the same inputs differ")
	}
}

func TestGetMachineConfigurationErrors(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	for _, tc := range []struct {
		name  string
		extra map[string]property.Value
		want  string
	}{
		{"broken patch", map[string]property.Value{"configPatches": strs("machine:\n  kubelet: {extraArgs: {a: b}}\n", "machine:\n  network:\n    hostname: x\n")},
			"after patch 2 of 2"},
		{"json6902 on 1.12", map[string]property.Value{"configPatches": strs(`[{"op":"add","path":"/machine/nodeLabels","value":{}}]`)},
			"strategic merge patch"},
		{"unsupported kubernetes", map[string]property.Value{"kubernetesVersion": str("1.29.0")}, "too old"},
		{"unsupported talos", map[string]property.Value{"talosVersion": str("v1.15.0")}, "v1.8.0 to v1.14.x"},
		{"contract newer than talos", map[string]property.Value{"talosVersion": str("v1.11.5"), "kubernetesVersion": str("1.34.1"),
			"versionContract": str("v1.12")}, "newer than Talos"},
		{"bad secrets", map[string]property.Value{"machineSecrets": property.New("cluster: {secret: hunter2}").WithSecret(true)}, "machineSecrets"},
	} {
		resp, err := s.Invoke(p.InvokeRequest{Token: configToken, Args: configArgs(t, tc.extra)})
		if err == nil && len(resp.Failures) == 0 {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q lacks %q", tc.name, msg, tc.want)
		}
		if strings.Contains(msg, "hunter2") || strings.Contains(msg, "BEGIN") {
			t.Errorf("%s: error quotes secret material", tc.name)
		}
	}
	resp, err := s.Invoke(p.InvokeRequest{Token: configToken, Args: configArgs(t, map[string]property.Value{"machineType": str("master")})})
	if err == nil && len(resp.Failures) == 0 {
		t.Errorf("machineType master accepted")
	}
}

func TestGetClientConfiguration(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	state := createSecrets(t, s, map[string]property.Value{})
	resp, err := s.Invoke(p.InvokeRequest{Token: clientToken, Args: property.NewMap(map[string]property.Value{
		"clusterName":         str("lab"),
		"endpoints":           strs("192.168.1.11", "192.168.1.12"),
		"nodes":               strs("192.168.1.11"),
		"clientConfiguration": state.Get("clientConfiguration"),
	})})
	if err != nil || len(resp.Failures) > 0 {
		t.Fatalf("invoke: %v %v", err, resp.Failures)
	}
	if !resp.Return.Get("talosConfig").Secret() {
		t.Errorf("talosConfig is not secret")
	}
	cfg, err := clientconfig.FromString(plain(resp.Return.Get("talosConfig")).AsString())
	if err != nil {
		t.Fatalf("talosctl cannot read it: %v", err)
	}
	if ctx := cfg.Contexts["lab"]; ctx == nil || len(ctx.Endpoints) != 2 || ctx.Nodes[0] != "192.168.1.11" {
		t.Errorf("context %+v", cfg.Contexts)
	}
	// Without nodes, the first endpoint is the default node (talosctl
	// kubeconfig refuses several, etcd commands need a control plane).
	resp, err = s.Invoke(p.InvokeRequest{Token: clientToken, Args: property.NewMap(map[string]property.Value{
		"clusterName":         str("lab"),
		"endpoints":           strs("192.168.1.12", "192.168.1.11"),
		"clientConfiguration": state.Get("clientConfiguration"),
	})})
	if err != nil || len(resp.Failures) > 0 {
		t.Fatalf("invoke without nodes: %v %v", err, resp.Failures)
	}
	cfg, err = clientconfig.FromString(plain(resp.Return.Get("talosConfig")).AsString())
	if err != nil {
		t.Fatalf("talosctl cannot read it: %v", err)
	}
	if ctx := cfg.Contexts["lab"]; ctx == nil || len(ctx.Nodes) != 1 || ctx.Nodes[0] != "192.168.1.12" {
		t.Errorf("default nodes: %+v", cfg.Contexts["lab"])
	}
	resp, err = s.Invoke(p.InvokeRequest{Token: clientToken, Args: property.NewMap(map[string]property.Value{
		"clusterName": str("lab"), "endpoints": strs("192.168.1.11"),
		"clientConfiguration": property.New(property.NewMap(map[string]property.Value{
			"caCertificate": str("x"), "clientCertificate": str("not pem"), "clientKey": str("k"),
		})),
	})})
	if err == nil || !strings.Contains(err.Error(), "MachineSecrets") {
		t.Errorf("bad certificate: %v %v", err, resp.Failures)
	}
}

func TestGetImageFactory(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	resp, err := s.Invoke(p.InvokeRequest{Token: factoryToken, Args: property.NewMap(map[string]property.Value{
		"talosVersion": str("1.12.5"),
		"extensions":   strs("siderolabs/qemu-guest-agent"),
	})})
	if err != nil || len(resp.Failures) > 0 {
		t.Fatalf("invoke: %v %v", err, resp.Failures)
	}
	const id = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	want := map[string]string{
		"schematicId":       id,
		"talosVersion":      "v1.12.5",
		"isoUrl":            "https://factory.talos.dev/image/" + id + "/v1.12.5/nocloud-amd64.iso",
		"diskImageUrl":      "https://factory.talos.dev/image/" + id + "/v1.12.5/nocloud-amd64.raw.xz",
		"diskImageQcow2Url": "https://factory.talos.dev/image/" + id + "/v1.12.5/nocloud-amd64.qcow2",
		"installerImage":    "factory.talos.dev/nocloud-installer/" + id + ":v1.12.5",
	}
	for k, v := range want {
		if got := resp.Return.Get(k).AsString(); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(resp.Return.Get("schematic").AsString(), "siderolabs/qemu-guest-agent") {
		t.Errorf("schematic %q", resp.Return.Get("schematic").AsString())
	}

	resp, err = s.Invoke(p.InvokeRequest{Token: factoryToken, Args: property.NewMap(map[string]property.Value{
		"talosVersion": str("v1.12.5"), "factoryUrl": str("https://mirror.lab"), "installerRegistry": str("registry.lab:5000/talos"),
	})})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Return.Get("installerImage").AsString(); !strings.HasPrefix(got, "registry.lab:5000/talos/nocloud-installer/376567988ad3") {
		t.Errorf("air-gapped installer image %q", got)
	}
	if _, err := s.Invoke(p.InvokeRequest{Token: factoryToken, Args: property.NewMap(map[string]property.Value{
		"talosVersion": str("v1.12.5"), "extensions": strs("qemu-guest-agent"),
	})}); err == nil || !strings.Contains(err.Error(), "siderolabs/qemu-guest-agent") {
		t.Errorf("short extension name: %v", err)
	}
}
