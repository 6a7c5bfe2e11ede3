// Package vmwatch tells Talos waits (talosapi.Options.Machines) when the
// Proxmox VM behind a node address is not running, so that a wait on a node
// whose VM is stopped, paused or deleted ends early with that reason
// instead of at its timeout. The decision (judge.go) is pure: a VM counts
// as down once every look over a grace period found it not running on a
// host that has been up long enough to have started its onboot VMs. The
// looks themselves go through a Source (the provider's one Proxmox
// client), at one pace per VM for the whole process (Book), and not while
// the node is in a silence the provider caused itself (an install, an
// upgrade, a reboot, a boot after its start).
package vmwatch
