package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// TagStackPrefix starts the tag that says which Pulumi stack a cluster's
// VMs belong to. The component finds its VMs by their cluster tag; without
// the stack's own tag two stacks that chose one cluster name would each
// take the other's VMs for their own nodes (and scale, upgrade or destroy
// them).
const TagStackPrefix = "stack-"

// StackTag is the tag of one stack: a hash of its project and stack name,
// because Proxmox tags allow only letters, digits and `_ - + .` and a stack
// name such as "org/project/dev" holds others. Two stacks of one name in
// two backends get one tag (the engine hands the component nothing that
// tells them apart and is stable for the stack's life).
func StackTag(project, stack string) string {
	sum := sha256.Sum256([]byte(project + "/" + stack))
	return TagStackPrefix + hex.EncodeToString(sum[:6])
}

// stackTagOf is the stack tag a VM carries, "" when none (a VM made before
// the tag existed).
func stackTagOf(tags []string) string {
	for _, t := range tags {
		if strings.HasPrefix(t, TagStackPrefix) {
			return t
		}
	}
	return ""
}

// CheckStack refuses a cluster name that VMs of another stack carry on
// this Proxmox cluster. A VM without a stack tag (made by a release before
// it) is taken as this stack's own: the next update tags it.
func CheckStack(cluster, stackTag string, vms []ObservedVM) error {
	if stackTag == "" {
		return nil
	}
	var others []string
	tags := map[string]bool{}
	for _, vm := range vms {
		if vm.Template || !slices.Contains(vm.Tags, TagManaged) || !slices.Contains(vm.Tags, TagClusterPrefix+cluster) {
			continue
		}
		if t := stackTagOf(vm.Tags); t != "" && t != stackTag {
			others = append(others, fmt.Sprintf("%d (%s on %s)", vm.VMID, vm.Name, vm.Host))
			tags[t] = true
		}
	}
	if len(others) == 0 {
		return nil
	}
	ts := make([]string, 0, len(tags))
	for t := range tags {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return &Error{Problems: []Problem{{Field: "clusterName", Message: fmt.Sprintf(
		"cluster %q already exists on this Proxmox cluster in another Pulumi stack: %s the tag %s, "+
			"this stack's tag is %s. Two clusters of one name would share hostnames and each manage the other's "+
			"VMs: choose another clusterName (or run this program in the stack that owns the cluster)",
		cluster, carry(others), strings.Join(ts, ", "), stackTag)}}}
}

func carry(vms []string) string {
	if len(vms) == 1 {
		return "VM " + vms[0] + " carries"
	}
	return "VMs " + strings.Join(vms, ", ") + " carry"
}
