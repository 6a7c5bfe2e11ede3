// Package pve wraps go-proxmox with what a Pulumi provider needs from the
// Proxmox VE API and go-proxmox alone does not give: a verified connection,
// tasks awaited by UPID with their exit status checked, retries for the
// transient answers Proxmox gives under load (locks, proxy errors), error
// classification by the texts Proxmox really answers with, and VMID
// allocation that is safe when many VMs are created at once.
//
// go-proxmox is the HTTP client (token auth, base URL, the JSON envelope,
// its error values). Calls go through Client.get/post/put/delete, where every
// write voids the kept inventory and storage lists and every answer is
// classified (apiErrorFrom); a typed go-proxmox call is wrapped the same way.
// Per call family (typed: go-proxmox's method; type: its response type
// decoded by Client.get; raw: our path and struct, each call site says why):
//
//	family                          typed/raw  why
//	GET /version                    typed      Client.Version
//	GET /pools                      typed      Client.Pools
//	GET .../agent/network-get-*     type       AgentNetworkIface; the method reads the VM first
//	GET .../pending                 type       PendingConfiguration; the method reads the VM first
//	VM writes (create, clone,       raw        Node/VirtualMachine methods read the node or VM
//	  config, resize, move_disk,               first (1-3 GETs, make bench counts them); Clone
//	  template, status/*, delete,              takes its own VMID (racy); *Task.Wait ignores a
//	  cloudinit)                               failed exit status (../shared/pitfalls.md)
//	PUT /pools                      raw        Pool.Update reads the pool first; no poolid field
//	GET .../config                  raw        kept as text per key; VirtualMachineConfig drops keys
//	GET .../status/current          raw        VirtualMachine.CPUs plain int, Agent IntOrBool
//	tasks: status, log, lists       raw        UPID unescaped in paths; Task/Log decoders panic
//	                                           on non-numbers; Log loses line order
//	GET /nodes                      raw        NodeStatus maxcpu/mem plain ints
//	GET /cluster/resources          raw        ClusterResource lacks lock; vmid/template plain ints
//	GET /cluster/nextid[?vmid]      raw        Cluster.NextID reads /cluster/status first, reads
//	                                           null as VMID 0; no call checks a given VMID
//	node network, storage list      raw        Node methods read the node first; Storage.Enabled
//	                                           reads a missing `enabled` as disabled
//	storage content, volume, delete raw        StorageContent lacks content, size plain int; no
//	  download-url                             volume-attributes call; Storage methods read first
//	GET /access/permissions         raw        IntOrBool refuses a flag sent as the string "1"
//
// Tasks are awaited here (task.go), with the exit status checked.
//
// The package has no Pulumi types; the resources in provider/proxmox use it.
package pve
