import pulumi
import pulumi_proxmoxtalos as proxmoxtalos
from pulumi_proxmoxtalos.talos import outputs

# One Talos node (a VM in maintenance mode at 192.168.1.21) made a control plane that also
# runs workloads, bootstrapped, and checked healthy.
node = "192.168.1.21"
talos_version = "v1.12.5"

secrets = proxmoxtalos.talos.MachineSecrets("secrets", talos_version=talos_version)


# The node-facing resources take the secrets' client configuration as their input type.
def client_args(c: outputs.ClientConfiguration) -> proxmoxtalos.talos.ClientConfigurationArgs:
    return proxmoxtalos.talos.ClientConfigurationArgs(
        ca_certificate=c.ca_certificate, client_certificate=c.client_certificate, client_key=c.client_key
    )


client_configuration = secrets.client_configuration.apply(client_args)

image = proxmoxtalos.talos.get_image_factory_output(
    talos_version=talos_version,
    platform="nocloud",
    extensions=["siderolabs/qemu-guest-agent"],
)
config = proxmoxtalos.talos.get_machine_configuration_output(
    cluster_name="single",
    cluster_endpoint=f"https://{node}:6443",
    machine_type=proxmoxtalos.talos.MachineType.CONTROL_PLANE,
    machine_secrets=secrets.machine_secrets,
    talos_version=talos_version,
    install_image=image.installer_image,
    config_patches=["cluster: { allowSchedulingOnControlPlanes: true }"],
)

apply = proxmoxtalos.talos.ConfigurationApply(
    "apply",
    node=node,
    client_configuration=client_configuration,
    machine_configuration=config.machine_configuration,
)
bootstrap = proxmoxtalos.talos.Bootstrap(
    "bootstrap",
    node=node,
    client_configuration=client_configuration,
    opts=pulumi.ResourceOptions(depends_on=[apply]),
)
kubeconfig = proxmoxtalos.talos.Kubeconfig(
    "kubeconfig",
    node=node,
    client_configuration=client_configuration,
    opts=pulumi.ResourceOptions(depends_on=[bootstrap]),
)
health = proxmoxtalos.talos.ClusterHealth(
    "health",
    control_planes=[node],
    client_configuration=client_configuration,
    kubeconfig=kubeconfig.kubeconfig,
    opts=pulumi.ResourceOptions(depends_on=[bootstrap]),
)
# Keeps the API server, controller manager, scheduler and kube-proxy at the version the
# configuration names (a later change of it upgrades them).
proxmoxtalos.talos.ControlPlaneComponents(
    "components",
    node=node,
    client_configuration=client_configuration,
    kubernetes_version=config.kubernetes_version,
    opts=pulumi.ResourceOptions(depends_on=[health]),
)

talosconfig = proxmoxtalos.talos.get_client_configuration_output(
    cluster_name="single",
    client_configuration=secrets.client_configuration,
    endpoints=[node],
    nodes=[node],
)

pulumi.export("kubeconfig", kubeconfig.kubeconfig)
pulumi.export("talosconfig", talosconfig.talos_config)
