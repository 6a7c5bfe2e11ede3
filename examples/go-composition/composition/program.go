// Package composition declares a Talos Kubernetes cluster whose inputs come from other
// resources, as they do when a TalosCluster is one part of a larger program:
//
//   - the bridge, VLAN and DNS servers from another stack (the network team's), through a
//     stack reference;
//   - one more DNS server from a resource of this program: the address the QEMU guest
//     agent reports for a resolver VM created here (not known until the VM exists, so
//     the first preview shows the nodes' DNS as changing once known);
//   - the registry mirror's password from a secret in the stack configuration.
//
// The project's main.go runs Program; tests run it inline.
package composition

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos"
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/talos"
)

// Program reads the stack configuration (see README.md) and declares the resolver VM and
// the cluster. It exports kubeconfig and talosconfig as secrets, the nodes and the summary.
func Program(ctx *pulumi.Context) error {
	cfg := config.New(ctx, "")
	talosVersion := cfg.Require("talosVersion")
	factoryURL := optional(cfg.Get("imageFactoryUrl"))
	host := cfg.Require("host")

	// The network team's stack exports `bridge`, `vlan` and `dnsServers`.
	network, err := pulumi.NewStackReference(ctx, cfg.Require("networkStack"), nil)
	if err != nil {
		return err
	}
	bridge := network.GetStringOutput(pulumi.String("bridge"))
	vlan := network.GetIntOutput(pulumi.String("vlan"))
	sharedDNS := network.GetOutput(pulumi.String("dnsServers")).ApplyT(strings).(pulumi.StringArrayOutput)

	// A resolver VM of this stack (here a Talos ISO with the guest agent stands in for your
	// DNS appliance's image). Its address is an output: the agent reports it once it runs.
	image, err := talos.GetImageFactory(ctx, &talos.GetImageFactoryArgs{
		TalosVersion: pulumi.StringRef(talosVersion),
		Extensions:   []string{"siderolabs/qemu-guest-agent"},
		FactoryUrl:   factoryURL,
	})
	if err != nil {
		return err
	}
	iso, err := proxmox.NewDownloadFile(ctx, "resolver-iso", &proxmox.DownloadFileArgs{
		Node:     pulumi.String(host),
		Storage:  pulumi.String("local"),
		Url:      pulumi.String(image.IsoUrl),
		Content:  proxmox.DownloadContentIso,
		FileName: pulumi.String("resolver-" + talosVersion + ".iso"),
	})
	if err != nil {
		return err
	}
	resolver, err := proxmox.NewVirtualMachine(ctx, "resolver", &proxmox.VirtualMachineArgs{
		Node:         pulumi.String(host),
		Name:         pulumi.String("resolver"),
		Iso:          iso.VolumeId,
		OsType:       proxmox.OsTypeL26,
		Cpu:          &proxmox.VirtualMachineCpuArgs{Cores: pulumi.Int(1), Type: pulumi.String("x86-64-v2-AES")},
		Memory:       &proxmox.VirtualMachineMemoryArgs{Dedicated: pulumi.Int(2048)},
		ScsiHardware: proxmox.ScsiHardwareVirtioScsiSingle,
		Disks: proxmox.VirtualMachineDiskArray{&proxmox.VirtualMachineDiskArgs{
			Interface: pulumi.String("scsi0"), Storage: pulumi.String("local-lvm"), Size: pulumi.Int(10),
		}},
		NetworkDevices: proxmox.VirtualMachineNetworkDeviceArray{&proxmox.VirtualMachineNetworkDeviceArgs{
			Bridge: bridge, VlanId: vlan,
		}},
		CloudInit: &proxmox.VirtualMachineCloudInitArgs{
			Storage: pulumi.String("local-lvm"),
			IpConfigs: proxmox.VirtualMachineIpConfigArray{&proxmox.VirtualMachineIpConfigArgs{
				Ipv4: &proxmox.VirtualMachineIpAddressArgs{
					Address: pulumi.String(cfg.Require("resolverAddress")),
					Gateway: pulumi.String(cfg.Require("gateway")),
				},
			}},
		},
		Agent: &proxmox.VirtualMachineAgentArgs{Enabled: pulumi.Bool(true), WaitForAddress: pulumi.Bool(true)},
	})
	if err != nil {
		return err
	}
	// The resolver first, then the network's shared servers.
	dnsServers := pulumi.All(resolver.Ipv4Addresses, sharedDNS).ApplyT(func(v []any) []string {
		out := append([]string{}, v[0].([]string)[:min(1, len(v[0].([]string)))]...)
		return append(out, v[1].([]string)...)
	}).(pulumi.StringArrayOutput)

	// A secret of this stack (`pulumi config set --secret mirrorPassword ...`): it stays a
	// secret in the state and reaches only the nodes' (secret) machine configurations.
	password := cfg.RequireSecret("mirrorPassword")
	mirrorHost := cfg.Require("mirrorHost")

	cluster, err := proxmoxtalos.NewTalosCluster(ctx, "cluster", &proxmoxtalos.TalosClusterArgs{
		ClusterName:       cfg.Require("clusterName"),
		TalosVersion:      pulumi.StringRef(talosVersion),
		KubernetesVersion: optional(cfg.Get("kubernetesVersion")),
		Hosts:             []proxmoxtalos.HostArgs{{Node: host}},
		Image:             &proxmoxtalos.ImageArgs{FactoryUrl: factoryURL},
		// Inputs the plan counts or places nodes with (subnet, addresses, hosts, counts) are
		// plain values; these may be outputs of other resources.
		Network: proxmoxtalos.NetworkArgs{
			Bridge:       bridge,
			Vlan:         vlan,
			DnsServers:   dnsServers,
			Subnet:       cfg.Require("subnet"),
			Gateway:      pulumi.StringRef(cfg.Require("gateway")),
			AddressRange: &proxmoxtalos.AddressRangeArgs{Start: cfg.Require("addressRangeStart"), End: cfg.Require("addressRangeEnd")},
		},
		ControlPlane:                   &proxmoxtalos.ControlPlaneArgs{Count: pulumi.IntRef(1)},
		AllowSchedulingOnControlPlanes: pulumi.BoolRef(true),
		RegistryMirrors: map[string]proxmoxtalos.RegistryMirrorArgs{
			"docker.io": {
				Endpoints: pulumi.StringArray{pulumi.String("https://" + mirrorHost)},
				Auth: &proxmoxtalos.RegistryAuthArgs{
					Username: pulumi.String(cfg.Require("mirrorUser")),
					Password: password,
				},
			},
		},
	})
	if err != nil {
		return err
	}

	ctx.Export("kubeconfig", pulumi.ToSecret(cluster.Kubeconfig))
	ctx.Export("talosconfig", pulumi.ToSecret(cluster.Talosconfig))
	ctx.Export("nodes", cluster.Nodes)
	ctx.Export("summary", cluster.Summary)
	ctx.Export("dnsServers", dnsServers)
	return nil
}

// strings turns a stack reference's list output into strings.
func strings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// optional is nil for an unset config value, so the component applies its default.
func optional(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
