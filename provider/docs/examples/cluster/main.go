//go:build ignore

package main

import (
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cluster, err := proxmoxtalos.NewTalosCluster(ctx, "cluster", &proxmoxtalos.TalosClusterArgs{
			ClusterName: "homelab",
			Hosts:       []proxmoxtalos.HostArgs{{Node: "pve1"}, {Node: "pve2"}, {Node: "pve3"}},
			Network: proxmoxtalos.NetworkArgs{
				Subnet:       "192.168.1.0/24",
				Gateway:      pulumi.StringRef("192.168.1.1"),
				AddressRange: &proxmoxtalos.AddressRangeArgs{Start: "192.168.1.21", End: "192.168.1.60"},
				DnsServers:   pulumi.StringArray{pulumi.String("192.168.1.1")},
			},
			Vip:          pulumi.StringRef("192.168.1.20"),
			ControlPlane: &proxmoxtalos.ControlPlaneArgs{Count: pulumi.IntRef(3)},
			WorkerPools: []proxmoxtalos.WorkerPoolArgs{{
				Name:  "workers",
				Count: pulumi.IntRef(2),
				Size:  &proxmoxtalos.VmSizeArgs{Cores: pulumi.IntRef(4), Memory: pulumi.IntRef(8192)},
			}},
		})
		if err != nil {
			return err
		}
		ctx.Export("kubeconfig", cluster.Kubeconfig)
		ctx.Export("summary", cluster.Summary)
		return nil
	})
}
