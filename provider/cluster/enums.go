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

// GitOpsTool is the GitOps tool to bootstrap.
type GitOpsTool string

// Values lists the GitOps tools.
func (GitOpsTool) Values() []infer.EnumValue[GitOpsTool] {
	return []infer.EnumValue[GitOpsTool]{
		{Name: "Flux", Value: "flux", Description: "Flux: a GitRepository and a Kustomization in flux-system."},
		{Name: "ArgoCd", Value: "argocd", Description: "Argo CD: an Application in the argocd namespace."},
	}
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
