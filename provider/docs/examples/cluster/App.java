package examples.cluster;

import com.proxmoxtalos.proxmoxtalos.TalosCluster;
import com.proxmoxtalos.proxmoxtalos.TalosClusterArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.AddressRangeArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.ControlPlaneArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.HostArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.NetworkArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.VmSizeArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.WorkerPoolArgs;
import com.pulumi.Context;
import com.pulumi.Pulumi;

public class App {
    public static void main(String[] args) {
        Pulumi.run(App::stack);
    }

    public static void stack(Context ctx) {
        var cluster = new TalosCluster("cluster", TalosClusterArgs.builder()
            .clusterName("homelab")
            .hosts(
                HostArgs.builder().node("pve1").build(),
                HostArgs.builder().node("pve2").build(),
                HostArgs.builder().node("pve3").build())
            .network(NetworkArgs.builder()
                .subnet("192.168.1.0/24")
                .gateway("192.168.1.1")
                .addressRange(AddressRangeArgs.builder().start("192.168.1.21").end("192.168.1.60").build())
                .dnsServers("192.168.1.1")
                .build())
            .vip("192.168.1.20")
            .controlPlane(ControlPlaneArgs.builder().count(3).build())
            .workerPools(WorkerPoolArgs.builder()
                .name("workers")
                .count(2)
                .size(VmSizeArgs.builder().cores(4).memory(8192).build())
                .build())
            .build());

        ctx.export("kubeconfig", cluster.kubeconfig());
        ctx.export("summary", cluster.summary());
    }
}
