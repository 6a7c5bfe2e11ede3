"""Must FAIL mypy: a list where the SDK declares a string, and a result field that does not
exist. If this type-checks, the SDK's hints have degraded to Any."""

from pulumi_proxmoxtalos import talos

result = talos.get_image_factory(talos_version=["v1.12.5"])
missing: str = result.no_such_field
