// Talos Linux Kubernetes clusters on Proxmox VE, from the first `pulumi up` to every day-two change.
package proxmoxtalos
