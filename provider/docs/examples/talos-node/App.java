package examples.talosnode;

import com.proxmoxtalos.proxmoxtalos.talos.Bootstrap;
import com.proxmoxtalos.proxmoxtalos.talos.BootstrapArgs;
import com.proxmoxtalos.proxmoxtalos.talos.ClusterHealth;
import com.proxmoxtalos.proxmoxtalos.talos.ClusterHealthArgs;
import com.proxmoxtalos.proxmoxtalos.talos.ConfigurationApply;
import com.proxmoxtalos.proxmoxtalos.talos.ConfigurationApplyArgs;
import com.proxmoxtalos.proxmoxtalos.talos.ControlPlaneComponents;
import com.proxmoxtalos.proxmoxtalos.talos.ControlPlaneComponentsArgs;
import com.proxmoxtalos.proxmoxtalos.talos.Kubeconfig;
import com.proxmoxtalos.proxmoxtalos.talos.KubeconfigArgs;
import com.proxmoxtalos.proxmoxtalos.talos.MachineSecrets;
import com.proxmoxtalos.proxmoxtalos.talos.MachineSecretsArgs;
import com.proxmoxtalos.proxmoxtalos.talos.TalosFunctions;
import com.proxmoxtalos.proxmoxtalos.talos.enums.MachineType;
import com.proxmoxtalos.proxmoxtalos.talos.inputs.ClientConfigurationArgs;
import com.proxmoxtalos.proxmoxtalos.talos.inputs.GetClientConfigurationArgs;
import com.proxmoxtalos.proxmoxtalos.talos.inputs.GetImageFactoryArgs;
import com.proxmoxtalos.proxmoxtalos.talos.inputs.GetMachineConfigurationArgs;
import com.pulumi.Context;
import com.pulumi.Pulumi;
import com.pulumi.core.Output;
import com.pulumi.resources.CustomResourceOptions;

/**
 * One Talos node (a VM in maintenance mode at 192.168.1.21) made a control plane that also
 * runs workloads, bootstrapped, and checked healthy.
 */
public class App {
    public static void main(String[] args) {
        Pulumi.run(App::stack);
    }

    public static void stack(Context ctx) {
        var node = "192.168.1.21";
        var talosVersion = "v1.12.5";

        var secrets = new MachineSecrets("secrets", MachineSecretsArgs.builder().talosVersion(talosVersion).build());
        // The node-facing resources take the secrets' client configuration as their input type.
        Output<ClientConfigurationArgs> client = secrets.clientConfiguration().applyValue(c -> ClientConfigurationArgs.builder()
            .caCertificate(c.caCertificate())
            .clientCertificate(c.clientCertificate())
            .clientKey(c.clientKey())
            .build());

        var image = TalosFunctions.getImageFactory(GetImageFactoryArgs.builder()
            .talosVersion(talosVersion)
            .platform("nocloud")
            .extensions("siderolabs/qemu-guest-agent")
            .build());
        var config = TalosFunctions.getMachineConfiguration(GetMachineConfigurationArgs.builder()
            .clusterName("single")
            .clusterEndpoint("https://" + node + ":6443")
            .machineType(MachineType.ControlPlane)
            .machineSecrets(secrets.machineSecrets())
            .talosVersion(talosVersion)
            .installImage(image.applyValue(i -> i.installerImage()))
            .configPatches("cluster: { allowSchedulingOnControlPlanes: true }")
            .build());

        var apply = new ConfigurationApply("apply", ConfigurationApplyArgs.builder()
            .node(node)
            .clientConfiguration(client)
            .machineConfiguration(config.applyValue(c -> c.machineConfiguration()))
            .build());
        var bootstrap = new Bootstrap("bootstrap", BootstrapArgs.builder()
            .node(node)
            .clientConfiguration(client)
            .build(), CustomResourceOptions.builder().dependsOn(apply).build());
        var kubeconfig = new Kubeconfig("kubeconfig", KubeconfigArgs.builder()
            .node(node)
            .clientConfiguration(client)
            .build(), CustomResourceOptions.builder().dependsOn(bootstrap).build());
        var health = new ClusterHealth("health", ClusterHealthArgs.builder()
            .controlPlanes(node)
            .clientConfiguration(client)
            .kubeconfig(kubeconfig.kubeconfig())
            .build(), CustomResourceOptions.builder().dependsOn(bootstrap).build());
        // Keeps the API server, controller manager, scheduler and kube-proxy at the version the
        // configuration names (a later change of it upgrades them).
        new ControlPlaneComponents("components", ControlPlaneComponentsArgs.builder()
            .node(node)
            .clientConfiguration(client)
            .kubernetesVersion(config.applyValue(c -> c.kubernetesVersion()))
            .build(), CustomResourceOptions.builder().dependsOn(health).build());

        var talosconfig = TalosFunctions.getClientConfiguration(GetClientConfigurationArgs.builder()
            .clusterName("single")
            .clientConfiguration(client)
            .endpoints(node)
            .nodes(node)
            .build());

        ctx.export("kubeconfig", kubeconfig.kubeconfig());
        ctx.export("talosconfig", talosconfig.applyValue(t -> t.talosConfig()));
    }
}
