// Package plan turns a TalosCluster spec into a per-node plan: which Proxmox
// host each VM lands on, which addresses it gets, how big it is, and the
// inputs its Talos machine configuration is generated from.
//
// It is pure: no I/O and no Pulumi types. What it needs to know about the
// world (free memory per host, the nodes that already exist) comes in as
// Facts and a previous State, so every rule is unit tested without a server.
//
// The entry points are Compute (spec -> Plan), Plan.State (the digest of a
// plan), Rebuild (the previous State, from the VMs Proxmox holds: the
// component keeps no state of its own between runs) and Compare (old vs new
// State -> the day-two summary a reviewer reads in a preview).
package plan
