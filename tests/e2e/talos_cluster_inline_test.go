package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// Issue 3 end to end, as a Go inline Automation API program with the real
// CLI: three control planes and a worker booted from the Talos ISO by the
// Proxmox resources in the lab, configured, bootstrapped, kubeconfig
// fetched, health awaited; then a change Talos applies live (worker kubelet
// argument), one that needs a reboot (a control plane's proxy setting) and
// a Talos upgrade of one control plane, each announced by the preview; and
// destroy with graceful resets that leave the lab empty.

// clusterStep is what the program deploys.
type clusterStep struct {
	workerPatch string
	cp2Patch    string
	cp3Version  string
}

type clusterNode struct {
	name, pve, disk, iface string
	role                   talos.MachineType
	host                   int
}

var clusterNodes = []clusterNode{
	{"cp1", "pve1", "/dev/sda", "scsi0", talos.MachineTypeControlPlane, 11},
	{"cp2", "pve2", "/dev/sda", "scsi0", talos.MachineTypeControlPlane, 12},
	{"cp3", "pve3", "/dev/sda", "scsi0", talos.MachineTypeControlPlane, 13},
	{"w1", "pve1", "/dev/vda", "virtio0", talos.MachineTypeWorker, 21},
}

const clusterVersion = "v1.12.5"

func clusterProgram(block netip.Prefix, step *clusterStep) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		addr := func(host int) string {
			a := block.Addr().As4()
			a[3] = byte(host)

			return netip.AddrFrom4(a).String()
		}

		factory := func(version string) (*talos.GetImageFactoryResult, error) {
			return talos.GetImageFactory(ctx, &talos.GetImageFactoryArgs{TalosVersion: &version, Extensions: []string{"siderolabs/qemu-guest-agent"}})
		}

		base, err := factory(clusterVersion)
		if err != nil {
			return err
		}

		upgraded, err := factory(step.cp3Version)
		if err != nil {
			return err
		}

		isos := map[string]*proxmox.DownloadFile{}
		for _, pve := range []string{"pve1", "pve2", "pve3"} {
			iso, err := proxmox.NewDownloadFile(ctx, "iso-"+pve, &proxmox.DownloadFileArgs{
				Node: pulumi.String(pve), Storage: pulumi.String("local"), Url: pulumi.String(base.IsoUrl),
				FileName: pulumi.String("talos-" + clusterVersion + "-nocloud-amd64.iso"),
			})
			if err != nil {
				return err
			}

			isos[pve] = iso
		}

		secrets, err := talos.NewMachineSecrets(ctx, "secrets", &talos.MachineSecretsArgs{TalosVersion: pulumi.String(clusterVersion)})
		if err != nil {
			return err
		}

		endpoint := "https://" + addr(11) + ":6443"
		applies := map[string]*talos.ConfigurationApply{}

		var bootstrap *talos.Bootstrap

		for _, n := range clusterNodes {
			vm, err := proxmox.NewVirtualMachine(ctx, n.name, &proxmox.VirtualMachineArgs{
				Node: pulumi.String(n.pve), Name: pulumi.String("e2e-" + n.name),
				OsType: proxmox.OsTypeL26.ToOsTypePtrOutput(), ScsiHardware: proxmox.ScsiHardwareVirtioScsiSingle.ToScsiHardwarePtrOutput(),
				Cpu:    proxmox.VirtualMachineCpuArgs{Cores: pulumi.Int(2), Type: pulumi.String("x86-64-v2-AES")},
				Memory: proxmox.VirtualMachineMemoryArgs{Dedicated: pulumi.Int(2048)},
				Disks: proxmox.VirtualMachineDiskArray{proxmox.VirtualMachineDiskArgs{
					Interface: pulumi.String(n.iface), Storage: pulumi.String("local-lvm"), Size: pulumi.Int(10),
				}},
				NetworkDevices: proxmox.VirtualMachineNetworkDeviceArray{proxmox.VirtualMachineNetworkDeviceArgs{Bridge: pulumi.String("vmbr0")}},
				Iso:            isos[n.pve].VolumeId,
				CloudInit: proxmox.VirtualMachineCloudInitArgs{
					Storage: pulumi.String("local-lvm"),
					IpConfigs: proxmox.VirtualMachineIpConfigArray{proxmox.VirtualMachineIpConfigArgs{
						Ipv4: proxmox.VirtualMachineIpAddressArgs{Address: pulumi.String(fmt.Sprintf("%s/%d", addr(n.host), block.Bits())), Gateway: pulumi.String(addr(1))},
					}},
				},
				Agent: proxmox.VirtualMachineAgentArgs{Enabled: pulumi.Bool(true)},
			})
			if err != nil {
				return err
			}

			image, patches := base.InstallerImage, []string{basePatch}

			switch n.name {
			case "w1":
				patches = append(patches, step.workerPatch)
			case "cp2":
				patches = append(patches, step.cp2Patch)
			case "cp3":
				image = upgraded.InstallerImage
			}

			cfg := talos.GetMachineConfigurationOutput(ctx, talos.GetMachineConfigurationOutputArgs{
				ClusterName: pulumi.String("e2e"), ClusterEndpoint: pulumi.String(endpoint), MachineType: n.role,
				MachineSecrets: secrets.MachineSecrets, TalosVersion: pulumi.String(clusterVersion),
				InstallDisk: pulumi.String(n.disk), InstallImage: pulumi.String(image),
				ConfigPatches: pulumi.ToStringArray(nonEmpty(patches)),
			}).MachineConfiguration()

			// Control planes one after the other (destroy resets them in
			// reverse, each leaving etcd before the next); the worker after
			// bootstrap. The first control plane is the last etcd member
			// left, so its reset cannot leave etcd: it is not graceful.
			deps := []pulumi.Resource{vm}

			switch n.name {
			case "cp2":
				deps = append(deps, applies["cp1"])
			case "cp3":
				deps = append(deps, applies["cp2"])
			case "w1":
				deps = append(deps, bootstrap)
			}

			apply, err := talos.NewConfigurationApply(ctx, n.name, &talos.ConfigurationApplyArgs{
				Node: pulumi.String(addr(n.host)), ClientConfiguration: secrets.ClientConfiguration,
				MachineConfiguration: cfg,
				Reset:                talos.ResetOnDeleteArgs{Enabled: pulumi.Bool(true), Graceful: pulumi.Bool(n.name != "cp1")},
			}, pulumi.DependsOn(deps))
			if err != nil {
				return err
			}

			applies[n.name] = apply

			if n.name == "cp1" {
				if bootstrap, err = talos.NewBootstrap(ctx, "bootstrap", &talos.BootstrapArgs{
					Node: pulumi.String(addr(11)), ClientConfiguration: secrets.ClientConfiguration,
				}, pulumi.DependsOn([]pulumi.Resource{apply})); err != nil {
					return err
				}
			}
		}

		kubeconfig, err := talos.NewKubeconfig(ctx, "kubeconfig", &talos.KubeconfigArgs{
			Node: pulumi.String(addr(11)), ClientConfiguration: secrets.ClientConfiguration,
		}, pulumi.DependsOn([]pulumi.Resource{bootstrap}))
		if err != nil {
			return err
		}

		var triggers pulumi.StringArray
		for _, n := range clusterNodes {
			triggers = append(triggers, applies[n.name].ConfigDigest, applies[n.name].RunningVersion)
		}

		health, err := talos.NewClusterHealth(ctx, "health", &talos.ClusterHealthArgs{
			ControlPlanes:       pulumi.ToStringArray([]string{addr(11), addr(12), addr(13)}),
			Workers:             pulumi.ToStringArray([]string{addr(21)}),
			ClientConfiguration: secrets.ClientConfiguration,
			Kubeconfig:          kubeconfig.Kubeconfig,
			Triggers:            triggers,
		})
		if err != nil {
			return err
		}

		ctx.Export("nodes", health.Nodes)
		ctx.Export("kubeconfig", kubeconfig.Kubeconfig)
		ctx.Export("cp2Mode", applies["cp2"].AppliedMode)
		ctx.Export("w1Mode", applies["w1"].AppliedMode)
		ctx.Export("cp3Version", applies["cp3"].RunningVersion)

		return nil
	}
}

func nonEmpty(s []string) []string {
	var out []string

	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}

	return out
}

func TestTalosClusterOnProxmoxInline(t *testing.T) {
	t.Parallel()

	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{})

	step := &clusterStep{cp3Version: clusterVersion}
	stack := harness.InlineStack(t, env, "talos-cluster", clusterProgram(l.AddressBlock(), step), &labConfig)
	ctx := context.Background()

	var out bytes.Buffer

	up, err := stack.Up(ctx, optup.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out.String())
	}

	if nodes, ok := up.Outputs["nodes"].Value.(map[string]any); !ok || len(nodes) != 4 {
		t.Fatalf("Kubernetes nodes after up: %v", up.Outputs["nodes"].Value)
	}

	if _, err := stack.Preview(ctx, optpreview.ExpectNoChanges()); err != nil {
		t.Fatalf("second preview: %v", err)
	}

	// A live change, a rebooting change and an upgrade, on three nodes.
	step.workerPatch = "machine: {kubelet: {extraArgs: {rotate-server-certificates: 'true'}}}"
	step.cp2Patch = "machine: {env: {https_proxy: 'http://proxy.lan:3128'}}"
	step.cp3Version = "v1.12.6"

	var preview bytes.Buffer
	if _, err := stack.Preview(ctx, optpreview.Diff(), optpreview.ProgressStreams(&preview), optpreview.ErrorProgressStreams(&preview)); err != nil {
		t.Fatalf("preview: %v\n%s", err, preview.String())
	}

	node := func(host byte) string { return l.Address(host).String() }

	for _, want := range []string{
		"node " + node(21) + ": live: 1 path, no reboot",
		"node " + node(12) + ": reboot: machine.env",
		"node " + node(13) + ": upgrade v1.12.5 → v1.12.6 (reboot, VM kept)",
		"+ machine.kubelet.extraArgs.rotate-server-certificates",
	} {
		if !strings.Contains(squeeze(preview.String()), squeeze(want)) {
			t.Errorf("preview lacks %q:\n%s", want, preview.String())
		}
	}

	if strings.Contains(preview.String(), "proxmox:VirtualMachine") && strings.Contains(preview.String(), "replace") {
		t.Errorf("the preview replaces a VM:\n%s", preview.String())
	}

	out.Reset()

	up, err = stack.Up(ctx, optup.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("up with changes: %v\n%s", err, out.String())
	}

	for key, want := range map[string]string{"cp2Mode": "reboot", "w1Mode": "no-reboot", "cp3Version": "v1.12.6"} {
		if got := up.Outputs[key].Value; got != want {
			t.Errorf("%s = %v, want %s", key, got, want)
		}
	}

	if up.Summary.ResourceChanges != nil {
		if n := (*up.Summary.ResourceChanges)["replace"]; n != 0 {
			t.Errorf("the update replaced %d resources", n)
		}
	}

	if _, err := stack.Preview(ctx, optpreview.ExpectNoChanges()); err != nil {
		t.Fatalf("preview after the changes: %v", err)
	}

	out.Reset()

	if _, err := stack.Destroy(ctx, optdestroy.ProgressStreams(&out)); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out.String())
	}

	if vms := l.VMs(); len(vms) != 0 {
		t.Errorf("destroy left %d VMs in the lab", len(vms))
	}
}
