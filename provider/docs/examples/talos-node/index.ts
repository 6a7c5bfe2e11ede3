import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

// One Talos node (a VM in maintenance mode at 192.168.1.21) made a control plane that also
// runs workloads, bootstrapped, and checked healthy.
const node = "192.168.1.21";
const talosVersion = "v1.12.5";

const secrets = new proxmoxtalos.talos.MachineSecrets("secrets", { talosVersion });
const image = proxmoxtalos.talos.getImageFactoryOutput({
    talosVersion,
    platform: "nocloud",
    extensions: ["siderolabs/qemu-guest-agent"],
});
const config = proxmoxtalos.talos.getMachineConfigurationOutput({
    clusterName: "single",
    clusterEndpoint: `https://${node}:6443`,
    machineType: "controlplane",
    machineSecrets: secrets.machineSecrets,
    talosVersion,
    installImage: image.installerImage,
    configPatches: ["cluster: { allowSchedulingOnControlPlanes: true }"],
});

const apply = new proxmoxtalos.talos.ConfigurationApply("apply", {
    node,
    clientConfiguration: secrets.clientConfiguration,
    machineConfiguration: config.machineConfiguration,
});
const bootstrap = new proxmoxtalos.talos.Bootstrap("bootstrap", {
    node,
    clientConfiguration: secrets.clientConfiguration,
}, { dependsOn: [apply] });
const kubeconfig = new proxmoxtalos.talos.Kubeconfig("kubeconfig", {
    node,
    clientConfiguration: secrets.clientConfiguration,
}, { dependsOn: [bootstrap] });
const health = new proxmoxtalos.talos.ClusterHealth("health", {
    controlPlanes: [node],
    clientConfiguration: secrets.clientConfiguration,
    kubeconfig: kubeconfig.kubeconfig,
}, { dependsOn: [bootstrap] });
// Keeps the API server, controller manager, scheduler and kube-proxy at the version the
// configuration names (a later change of it upgrades them).
new proxmoxtalos.talos.ControlPlaneComponents("components", {
    node,
    clientConfiguration: secrets.clientConfiguration,
    kubernetesVersion: config.kubernetesVersion,
}, { dependsOn: [health] });

const talosconfig = proxmoxtalos.talos.getClientConfigurationOutput({
    clusterName: "single",
    clientConfiguration: secrets.clientConfiguration,
    endpoints: [node],
    nodes: [node],
});

export const kubeconfigText = kubeconfig.kubeconfig;
export const talosconfigText = talosconfig.talosConfig;
