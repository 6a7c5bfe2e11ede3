"""Type-checked against the installed Python SDK by `make python-sdk-check` (mypy --strict):
the SDK's hints must be precise enough that this passes and python_typed_misuse.py fails."""

import pulumi_proxmoxtalos as proxmoxtalos
from pulumi_proxmoxtalos import talos


def schematic(version: str) -> str:
    result = talos.get_image_factory(talos_version=version, extensions=["siderolabs/qemu-guest-agent"])
    schematic_id: str = result.schematic_id
    return schematic_id


def provider_type() -> type:
    return proxmoxtalos.Provider
