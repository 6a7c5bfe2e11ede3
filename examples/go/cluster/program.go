// Package cluster declares a Talos Kubernetes cluster on Proxmox VE with the TalosCluster
// component: three control planes behind a VIP, a worker pool and the Talos cloud
// controller manager. The project's main.go runs Program; tests run it inline.
package cluster

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos"
)

// Program reads the stack configuration (see README.md) and declares the cluster. It
// exports kubeconfig and talosconfig as secrets, the API endpoint and the nodes.
func Program(ctx *pulumi.Context) error {
	cfg := config.New(ctx, "")

	var hostNames, dnsServers []string
	cfg.RequireObject("hosts", &hostNames)
	if err := cfg.GetObject("dnsServers", &dnsServers); err != nil {
		return err
	}
	// Most of the component's inputs are plain values (it plans the cluster from them when
	// it is constructed), so the SDK takes Go values for them; the network's bridge, VLAN
	// and DNS, patches and manifests may be outputs of other resources (pulumi.Input).
	var hosts []proxmoxtalos.HostArgs
	for _, h := range hostNames {
		hosts = append(hosts, proxmoxtalos.HostArgs{
			Node:        h,
			DiskStorage: pulumi.StringRef(orDefault(cfg.Get("diskStorage"), "local-lvm")),
		})
	}
	workers := 1
	if n, err := cfg.TryInt("workerCount"); err == nil {
		workers = n
	}
	size := &proxmoxtalos.VmSizeArgs{Cores: pulumi.IntRef(2), Memory: pulumi.IntRef(4096), DiskSize: pulumi.IntRef(20)}

	cluster, err := proxmoxtalos.NewTalosCluster(ctx, "cluster", &proxmoxtalos.TalosClusterArgs{
		ClusterName:       orDefault(cfg.Get("clusterName"), "talos"),
		TalosVersion:      optional(cfg.Get("talosVersion")),
		KubernetesVersion: optional(cfg.Get("kubernetesVersion")),
		Hosts:             hosts,
		Image: &proxmoxtalos.ImageArgs{
			IsoStorage: pulumi.StringRef(orDefault(cfg.Get("isoStorage"), "local")),
			// An Image Factory mirror (air-gapped sites, the lab); default factory.talos.dev.
			FactoryUrl: optional(cfg.Get("imageFactoryUrl")),
		},
		Network: proxmoxtalos.NetworkArgs{
			Bridge:     pulumi.String(orDefault(cfg.Get("bridge"), "vmbr0")),
			Subnet:     cfg.Require("subnet"),
			Gateway:    pulumi.StringRef(cfg.Require("gateway")),
			DnsServers: pulumi.ToStringArray(dnsServers),
			AddressRange: &proxmoxtalos.AddressRangeArgs{
				Start: cfg.Require("addressRangeStart"),
				End:   cfg.Require("addressRangeEnd"),
			},
		},
		// The Kubernetes API answers on the VIP once etcd runs; the endpoint defaults to it.
		Vip:          pulumi.StringRef(cfg.Require("vip")),
		ControlPlane: &proxmoxtalos.ControlPlaneArgs{Count: pulumi.IntRef(3), Size: size},
		WorkerPools: []proxmoxtalos.WorkerPoolArgs{{
			Name:  "workers",
			Count: pulumi.IntRef(workers),
			Size:  size,
		}},
		// The Talos CCM (nodes get spec.providerID) and the kubelet serving certificate
		// approver; on by default, spelled out here.
		CloudControllerManager: &proxmoxtalos.CloudControllerManagerArgs{Enabled: pulumi.BoolRef(true)},
	})
	if err != nil {
		return err
	}

	ctx.Export("kubeconfig", pulumi.ToSecret(cluster.Kubeconfig))
	ctx.Export("talosconfig", pulumi.ToSecret(cluster.Talosconfig))
	ctx.Export("endpoint", cluster.Endpoint)
	ctx.Export("nodes", cluster.Nodes)
	ctx.Export("summary", cluster.Summary)
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// optional is nil for an unset config value, so the component applies its default.
func optional(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
