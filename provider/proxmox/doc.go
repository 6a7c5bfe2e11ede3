// Package proxmox is the Pulumi module `proxmox`: VirtualMachine and
// DownloadFile. Option building (inputs to Proxmox parameters), reading a
// configuration back into inputs, validation and diff classification are
// pure functions in their own files; the resource files do the I/O through
// provider/pve.
package proxmox
