// Package pve wraps go-proxmox with what a Pulumi provider needs from the
// Proxmox VE API and go-proxmox alone does not give: a verified connection,
// tasks awaited by UPID with their exit status checked, retries for the
// transient answers Proxmox gives under load (locks, proxy errors), error
// classification by the texts Proxmox really answers with, and VMID
// allocation that is safe when many VMs are created at once.
//
// go-proxmox is used as the HTTP client (token auth, base URL, the JSON
// envelope, its error values) and for its types and calls where they fit
// (Client.Version at connect, AgentNetworkIface). Everything else goes
// through Client.get/post/put/delete with the API's paths, because:
//
//   - every write voids the kept inventory and storage lists, and every
//     answer is classified (apiErrorFrom), in those four functions;
//   - go-proxmox's typed objects read before they act: Client.Node reads
//     the node's status, Node.VirtualMachine the VM's status and config
//     (VirtualMachine.Ping), one to three requests that this package
//     already has or does not need (make bench counts requests per VM);
//   - its Task.Wait ignores a failed exit status and sleeps through a
//     cancelled context (../shared/pitfalls.md): tasks are awaited here
//     (task.go);
//   - several of its response types hold numbers as plain ints (NodeStatus
//     MaxMem/Mem/MaxCPU, ClusterResource VMID/Template) where Proxmox may
//     answer with strings, which go-proxmox itself meets with StringOrInt
//     on other fields: this package's response structs use json.Number.
//
// The package has no Pulumi types; the resources in provider/proxmox use it.
package pve
