"""A small program over the Python SDK's low-level resources, run by
examples_python_test.go through runner.py: a resource with secret outputs, offline invokes,
an enum, and a resource on the lab's Proxmox API. It proves the Python plumbing (SDK wheel,
Automation API, plugin path, provider config) independently of the example's cluster."""

import pulumi
import pulumi_proxmoxtalos as proxmoxtalos


def smoke() -> None:
    config = pulumi.Config()
    talos_version = config.get("talosVersion") or "v1.12.5"

    image = proxmoxtalos.talos.get_image_factory(
        talos_version=talos_version,
        platform="nocloud",
        extensions=["siderolabs/qemu-guest-agent"],
    )
    iso = proxmoxtalos.proxmox.DownloadFile(
        "talos-iso",
        node=config.require("host"),
        storage="local",
        url=image.iso_url,
        content=proxmoxtalos.proxmox.DownloadContent.ISO,
        file_name=f"talos-{talos_version}-nocloud-amd64.iso",
    )
    secrets = proxmoxtalos.talos.MachineSecrets("secrets", talos_version=talos_version)
    talosconfig = proxmoxtalos.talos.get_client_configuration_output(
        cluster_name="smoke",
        # Python invokes serialize object arguments without type metadata: the output
        # object's snake_case keys would reach the provider untranslated ("Missing required
        # field 'caCertificate'"), and its class is not the annotated input type either
        # (pulumi/pulumi#24507). Converting to the SDK's input class fixes both.
        client_configuration=secrets.client_configuration.apply(
            lambda c: proxmoxtalos.talos.ClientConfiguration(
                ca_certificate=c.ca_certificate,
                client_certificate=c.client_certificate,
                client_key=c.client_key,
            )
        ),
        endpoints=["192.0.2.10"],
    )

    pulumi.export("schematicId", image.schematic_id)
    pulumi.export("installerImage", image.installer_image)
    pulumi.export("volumeId", iso.volume_id)
    pulumi.export("machineSecrets", secrets.machine_secrets)
    pulumi.export("talosconfig", talosconfig.talos_config)
