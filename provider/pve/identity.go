package pve

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// A VM the provider creates carries, from the first call that makes it, an
// identity derived from the Pulumi resource that asked for it (see
// provider/proxmox identity.go), so that a create interrupted by a killed
// process is found and adopted by the next one instead of made twice:
//
//   - a create (POST /nodes/{node}/qemu) sends the tag "ptnew-<identity>";
//   - a clone cannot set tags, and its new VM's configuration holds only
//     "lock: clone" until the copy ends (qemu-server API2/Qemu.pm
//     clone_vm), so the clone's description carries the line
//     "proxmoxtalos-creating: ptnew-<identity>", and the first
//     configuration update after it adds the tag;
//   - once the create has handed the VM to Pulumi, the creating tag and
//     line are replaced by the tag "ptid-<hash of identity and VMID>": the
//     VM belongs to that resource. A copy of the VM (a clone made by hand
//     inherits its tags) has another VMID, so the tag does not claim it.
//
// Tags starting with "ptnew-" or "ptid-" are the provider's: it keeps them
// out of the tags a program manages.
//
// A download (download-url) takes neither tags nor notes: its URL carries
// the identity in a fragment, "#proxmoxtalos=ptnew-<identity>". wget never
// sends a fragment, so the server sees the URL the program gave, and PVE
// writes the whole URL into the task's log ("downloading <url> to <path>"),
// where the next create finds it.

const (
	creatingTagPrefix = "ptnew-"
	ownerTagPrefix    = "ptid-"
	creatingLinePre   = "proxmoxtalos-creating: "
)

// CreatingTag is the tag of a VM being created for identity id.
func CreatingTag(id string) string { return creatingTagPrefix + id }

// OwnerTag is the tag of VM vmid, created for identity id and handed over.
func OwnerTag(id string, vmid int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", id, vmid)))
	return ownerTagPrefix + hex.EncodeToString(sum[:8])
}

// CreatingLine is the description line of a clone being created for id.
func CreatingLine(id string) string { return creatingLinePre + CreatingTag(id) }

// IsSystemTag reports the provider's own tags.
func IsSystemTag(t string) bool {
	t = strings.ToLower(t)
	return strings.HasPrefix(t, creatingTagPrefix) || strings.HasPrefix(t, ownerTagPrefix)
}

// IsCreating reports whether a VM with these tags is still being created:
// its create was interrupted, or runs now.
func IsCreating(tags []string) bool {
	for _, t := range tags {
		if strings.HasPrefix(strings.ToLower(t), creatingTagPrefix) {
			return true
		}
	}
	return false
}

// UserTags drops the provider's own tags.
func UserTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if !IsSystemTag(t) {
			out = append(out, t)
		}
	}
	return out
}

// SystemTags keeps only the provider's own tags.
func SystemTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if IsSystemTag(t) {
			out = append(out, t)
		}
	}
	return out
}

// HasCreatingLine reports whether a description holds the creating line of
// identity id.
func HasCreatingLine(description, id string) bool {
	for _, l := range strings.Split(description, "\n") {
		if strings.TrimSpace(l) == CreatingLine(id) {
			return true
		}
	}
	return false
}

// WithoutCreatingLine removes any creating line from a description.
func WithoutCreatingLine(description string) string {
	if !strings.Contains(description, creatingLinePre) {
		return description
	}
	var keep []string
	for _, l := range strings.Split(description, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), creatingLinePre) {
			keep = append(keep, l)
		}
	}
	return strings.TrimRight(strings.Join(keep, "\n"), "\n")
}

// WithCreatingLine appends the creating line of id to a description.
func WithCreatingLine(description, id string) string {
	if description = strings.TrimRight(description, "\n"); description != "" {
		description += "\n"
	}
	return description + CreatingLine(id)
}

// DownloadURL is url with the fragment that carries identity id, or url as
// it is when it has a fragment of its own (then no identity).
func DownloadURL(url, id string) string {
	if id == "" || strings.Contains(url, "#") {
		return url
	}
	return url + "#proxmoxtalos=" + CreatingTag(id)
}
