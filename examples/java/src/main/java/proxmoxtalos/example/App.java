package proxmoxtalos.example;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import com.pulumi.Context;
import com.pulumi.Pulumi;
import com.proxmoxtalos.proxmoxtalos.TalosCluster;
import com.proxmoxtalos.proxmoxtalos.TalosClusterArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.AddressRangeArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.CloudControllerManagerArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.ControlPlaneArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.HostArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.ImageArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.NetworkArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.VmSizeArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.WorkerPoolArgs;

/**
 * A Talos Kubernetes cluster on Proxmox VE with the TalosCluster component: three control
 * planes behind a VIP, a worker pool and the Talos cloud controller manager.
 */
public class App {
    public static void main(String[] args) {
        Pulumi.run(App::stack);
    }

    /** Reads the stack configuration (see README.md), declares the cluster and exports its outputs. */
    public static void stack(Context ctx) {
        var config = ctx.config();
        var diskStorage = config.get("diskStorage").orElse("local-lvm");
        List<HostArgs> hosts = Arrays.stream(config.requireObject("hosts", String[].class))
            .map(node -> HostArgs.builder().node(node).diskStorage(diskStorage).build())
            .collect(Collectors.toList());
        var size = VmSizeArgs.builder().cores(2).memory(4096).diskSize(20).build();

        var network = NetworkArgs.builder()
            .bridge(config.get("bridge").orElse("vmbr0"))
            .subnet(config.require("subnet"))
            .gateway(config.require("gateway"))
            .addressRange(AddressRangeArgs.builder()
                .start(config.require("addressRangeStart"))
                .end(config.require("addressRangeEnd"))
                .build());
        config.getObject("dnsServers", String[].class).ifPresent(dns -> network.dnsServers(dns));

        var cluster = new TalosCluster("cluster", TalosClusterArgs.builder()
            .clusterName(config.get("clusterName").orElse("talos"))
            .talosVersion(config.get("talosVersion").orElse(null))
            .kubernetesVersion(config.get("kubernetesVersion").orElse(null))
            .hosts(hosts)
            .image(ImageArgs.builder()
                .isoStorage(config.get("isoStorage").orElse("local"))
                // An Image Factory mirror (air-gapped sites, the lab); default factory.talos.dev.
                .factoryUrl(config.get("imageFactoryUrl").orElse(null))
                .build())
            .network(network.build())
            // The Kubernetes API answers on the VIP once etcd runs; the endpoint defaults to it.
            .vip(config.require("vip"))
            .controlPlane(ControlPlaneArgs.builder().count(3).size(size).build())
            .workerPools(WorkerPoolArgs.builder()
                .name("workers")
                .count(config.getInteger("workerCount").orElse(1))
                .size(size)
                .build())
            // The Talos CCM (nodes get spec.providerID) and the kubelet serving certificate
            // approver; on by default, spelled out here.
            .cloudControllerManager(CloudControllerManagerArgs.builder().enabled(true).build())
            .build());

        ctx.export("kubeconfig", cluster.kubeconfig().asSecret());
        ctx.export("talosconfig", cluster.talosconfig().asSecret());
        ctx.export("endpoint", cluster.endpoint());
        // The nodes as a list of objects, as the other languages export them. The Java SDK
        // cannot export its output classes (com.pulumi.serialization.internal.Serializer takes
        // primitives, lists, maps, Output and InputArgs only), so each node becomes a map.
        ctx.export("nodes", cluster.nodes().applyValue(nodes -> nodes.stream()
            .map(n -> Map.<String, Object>of(
                "name", n.name(),
                "role", n.role().getValue(),
                "pool", n.pool(),
                "proxmoxNode", n.proxmoxNode(),
                "vmId", n.vmId(),
                "address", n.address(),
                "macAddress", n.macAddress()))
            .collect(Collectors.toList())));
        ctx.export("summary", cluster.summary());
    }
}
