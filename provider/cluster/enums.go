package cluster

import "github.com/pulumi/pulumi-go-provider/infer"

// DiskBus is the bus of the VMs' disks.
type DiskBus string

// Values lists the disk buses.
func (DiskBus) Values() []infer.EnumValue[DiskBus] {
	return []infer.EnumValue[DiskBus]{
		{Name: "Scsi", Value: "scsi", Description: "SCSI disks (`scsi0`, ...): Talos sees `/dev/sda`, `/dev/sdb`, ..."},
		{Name: "Virtio", Value: "virtio", Description: "VirtIO block disks (`virtio0`, ...): `/dev/vda`, `/dev/vdb`, ..."},
		{Name: "Sata", Value: "sata", Description: "SATA disks (`sata0`, ...): `/dev/sda`, ..."},
	}
}

// Annotate documents the type.
func (e *DiskBus) Annotate(a infer.Annotator) {
	a.Describe(e, "Bus of the VMs' disks in Proxmox. It decides the device names Talos sees: the install disk is `/dev/sda` on scsi and sata, `/dev/vda` on virtio.")
}

// TaintEffect is a Kubernetes taint effect.
type TaintEffect string

// Values lists the taint effects.
func (TaintEffect) Values() []infer.EnumValue[TaintEffect] {
	return []infer.EnumValue[TaintEffect]{
		{Name: "NoSchedule", Value: "NoSchedule", Description: "New pods without a toleration are not scheduled."},
		{Name: "PreferNoSchedule", Value: "PreferNoSchedule", Description: "The scheduler avoids the node."},
		{Name: "NoExecute", Value: "NoExecute", Description: "Running pods without a toleration are evicted too."},
	}
}

// Annotate documents the type.
func (e *TaintEffect) Annotate(a infer.Annotator) {
	a.Describe(e, "What a Kubernetes taint does to pods that do not tolerate it.")
}

// CniName is the choice of pod network.
type CniName string

// Values lists the CNI choices.
func (CniName) Values() []infer.EnumValue[CniName] {
	return []infer.EnumValue[CniName]{
		{Name: "Flannel", Value: "flannel", Description: "Flannel, installed and managed by Talos (the default)."},
		{Name: "Cilium", Value: "cilium", Description: "Cilium from the given manifests, with kube-proxy disabled."},
		{Name: "Custom", Value: "custom", Description: "Any CNI from the given manifests."},
		{Name: "None", Value: "none", Description: "No CNI: nodes stay NotReady until one is installed."},
	}
}

// Annotate documents the type.
func (e *CniName) Annotate(a infer.Annotator) {
	a.Describe(e, "The pod network (CNI) the cluster runs.")
}

// GitOpsTool is the GitOps tool to bootstrap.
type GitOpsTool string

// Values lists the GitOps tools.
func (GitOpsTool) Values() []infer.EnumValue[GitOpsTool] {
	return []infer.EnumValue[GitOpsTool]{
		{Name: "Flux", Value: "flux", Description: "Flux: a GitRepository and a Kustomization in flux-system."},
		{Name: "ArgoCd", Value: "argocd", Description: "Argo CD: an Application in the argocd namespace."},
	}
}

// Annotate documents the type.
func (e *GitOpsTool) Annotate(a infer.Annotator) {
	a.Describe(e, "The GitOps tool installed at bootstrap to sync the cluster from a Git repository.")
}

// NodeRole is a node's Talos machine type.
type NodeRole string

// Values lists the roles.
func (NodeRole) Values() []infer.EnumValue[NodeRole] {
	return []infer.EnumValue[NodeRole]{
		{Name: "ControlPlane", Value: "controlplane", Description: "Runs etcd and the Kubernetes control plane."},
		{Name: "Worker", Value: "worker", Description: "Runs workloads."},
	}
}

// Annotate documents the type.
func (e *NodeRole) Annotate(a infer.Annotator) {
	a.Describe(e, "A node's role in the cluster: its Talos machine type.")
}
