"""The project's entry point: Pulumi runs this file; tests call the same function."""

from cluster import talos_cluster

talos_cluster()
