// Package pve wraps go-proxmox with what a Pulumi provider needs from the
// Proxmox VE API and go-proxmox alone does not give: a verified connection,
// tasks awaited by UPID with their exit status checked, retries for the
// transient answers Proxmox gives under load (locks, proxy errors), error
// classification by the texts Proxmox really answers with, and VMID
// allocation that is safe when many VMs are created at once.
//
// The package has no Pulumi types; the resources in provider/proxmox use it.
package pve
