package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// The talos functions in their output form with arguments that are resource
// outputs, one of them secret (machineSecrets of a MachineSecrets resource),
// as a user writes them: from Go through the generated SDK and from YAML with
// fn::invoke. The arguments must reach the provider (the Go SDK used to send
// none: see dropFunctionInputDefaults in gen/sdkgen), the defaults the
// program leaves out must be applied by the provider, and results computed
// from a secret must stay secret.

const fnCluster = "fnout"

// checkGeneratedConfig checks a worker configuration generated from the
// bundle: the cluster name, the installer image and the provider's default
// install disk arrived, and it carries the bundle's own trustd token.
func checkGeneratedConfig(t *testing.T, cfg, bundleYAML string) {
	t.Helper()

	bundle, err := talosconfig.UnmarshalSecrets(bundleYAML)
	if err != nil {
		t.Fatalf("the machineSecrets output is not a secrets bundle: %v", err)
	}

	for _, want := range []string{
		"clusterName: " + fnCluster,
		"image: factory.talos.dev/nocloud-installer/" + simtest.Schematic + ":v1.12.5",
		"disk: /dev/sda", // installDisk left out: the provider's default
		"token: " + bundle.TrustdInfo.Token,
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("the generated configuration lacks %q", strings.SplitN(want, ":", 2)[0]+": …")
		}
	}
}

func TestTalosFunctionsWithOutputArgumentsGo(t *testing.T) {
	t.Parallel()

	env := harness.NewEnv(t)
	program := func(ctx *pulumi.Context) error {
		secrets, err := talos.NewMachineSecrets(ctx, "secrets", &talos.MachineSecretsArgs{TalosVersion: pulumi.String("v1.12.5")})
		if err != nil {
			return err
		}

		// A plain argument that depends on a resource, and a secret one.
		version := secrets.TalosVersion.Elem()
		factory := talos.GetImageFactoryOutput(ctx, talos.GetImageFactoryOutputArgs{
			TalosVersion: version, Extensions: pulumi.StringArray{pulumi.String("siderolabs/qemu-guest-agent")},
		})
		cfg := talos.GetMachineConfigurationOutput(ctx, talos.GetMachineConfigurationOutputArgs{
			ClusterName: pulumi.String(fnCluster), ClusterEndpoint: pulumi.String("https://127.0.0.1:6443"),
			MachineType: talos.MachineTypeWorker, MachineSecrets: secrets.MachineSecrets,
			TalosVersion: version, InstallImage: factory.InstallerImage(),
		})
		client := talos.GetClientConfigurationOutput(ctx, talos.GetClientConfigurationOutputArgs{
			ClusterName: pulumi.String(fnCluster), ClientConfiguration: secrets.ClientConfiguration,
			Endpoints: pulumi.StringArray{pulumi.String("127.0.0.1")},
		})

		ctx.Export("schematicId", factory.SchematicId())
		ctx.Export("machineConfiguration", cfg.MachineConfiguration())
		ctx.Export("configTalosVersion", cfg.TalosVersion())
		ctx.Export("talosconfig", client.TalosConfig())
		ctx.Export("machineSecrets", secrets.MachineSecrets)

		return nil
	}

	stack := harness.InlineStack(t, env, "fn-outputs-go", program, nil)
	ctx := context.Background()

	// Before the first up the bundle is unknown: the invokes wait, no error.
	if _, err := stack.Preview(ctx); err != nil {
		t.Fatalf("preview before up: %v", err)
	}

	res, err := stack.Up(ctx)
	if err != nil {
		t.Fatalf("up: %v", err)
	}

	out := func(name string) auto.OutputValue {
		v, ok := res.Outputs[name]
		if !ok {
			t.Fatalf("no output %s", name)
		}

		return v
	}

	// The extensions arrived (without them the schematic is the empty one).
	if got := out("schematicId").Value; got != simtest.Schematic {
		t.Errorf("schematicId = %v, want the qemu-guest-agent schematic %s", got, simtest.Schematic)
	}

	if got := out("configTalosVersion").Value; got != "v1.12.5" {
		t.Errorf("the configuration was generated for %v, want v1.12.5", got)
	}

	cfg, bundle := out("machineConfiguration"), out("machineSecrets")
	if !cfg.Secret || !out("talosconfig").Secret {
		t.Errorf("results computed from the secret bundle are not secret: machineConfiguration %v, talosconfig %v",
			cfg.Secret, out("talosconfig").Secret)
	}

	checkGeneratedConfig(t, fmt.Sprint(cfg.Value), fmt.Sprint(bundle.Value))

	if strings.Contains(res.StdOut+res.StdErr, "token: ") {
		t.Errorf("the up output shows configuration contents")
	}

	if _, err := stack.Preview(ctx, optpreview.ExpectNoChanges()); err != nil {
		t.Errorf("second preview: %v", err)
	}

	if _, err := stack.Destroy(ctx); err != nil {
		t.Fatalf("destroy: %v", err)
	}
}

func TestTalosFunctionsWithOutputArgumentsYAML(t *testing.T) {
	t.Parallel()

	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "fnoutputs", fmt.Sprintf(`variables:
  factory:
    fn::invoke:
      function: proxmoxtalos:talos:getImageFactory
      arguments:
        talosVersion: ${secrets.talosVersion}
        extensions: [ siderolabs/qemu-guest-agent ]
  config:
    fn::invoke:
      function: proxmoxtalos:talos:getMachineConfiguration
      arguments:
        clusterName: %[1]s
        clusterEndpoint: https://127.0.0.1:6443
        machineType: worker
        machineSecrets: ${secrets.machineSecrets}
        talosVersion: ${secrets.talosVersion}
        installImage: ${factory.installerImage}
      return: machineConfiguration
resources:
  secrets:
    type: proxmoxtalos:talos:MachineSecrets
    properties:
      talosVersion: v1.12.5
outputs:
  schematicId: ${factory.schematicId}
  machineConfiguration: ${config}
  machineSecrets: ${secrets.machineSecrets}
`, fnCluster))

	mustSucceed(t, "preview before up", p.Preview(t))
	up := mustSucceed(t, "up", p.Up(t))

	if strings.Contains(up, "token: ") {
		t.Errorf("the up output shows configuration contents")
	}

	// Without --show-secrets a secret output shows as "[secret]".
	var hidden map[string]any
	if err := json.Unmarshal([]byte(mustSucceed(t, "stack output", p.Run(t, "stack", "output", "--json"))), &hidden); err != nil {
		t.Fatal(err)
	}

	if hidden["machineConfiguration"] != "[secret]" {
		t.Errorf("machineConfiguration output is not secret: %.40v…", hidden["machineConfiguration"])
	}

	if hidden["schematicId"] != simtest.Schematic {
		t.Errorf("schematicId = %v, want the qemu-guest-agent schematic %s", hidden["schematicId"], simtest.Schematic)
	}

	var shown map[string]string
	if err := json.Unmarshal([]byte(p.MustRun(t, "stack", "output", "--json", "--show-secrets").Stdout), &shown); err != nil {
		t.Fatal(err)
	}

	checkGeneratedConfig(t, shown["machineConfiguration"], shown["machineSecrets"])
	mustSucceed(t, "second preview", p.Preview(t, "--expect-no-changes"))
	mustSucceed(t, "destroy", p.Destroy(t))
}
