package proxmox

import (
	"sort"
	"strings"
)

// propString is a Proxmox property string such as
// "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=10" or
// "local-lvm:vm-104-disk-0,iothread=1,size=20G": a list of key=value pairs,
// where the first item may be a bare value for the format's default key.
type propString struct {
	// Head is the first item when it has no '=' (the default key's value).
	Head string
	KV   map[string]string
}

func parsePropString(s string) propString {
	ps := propString{KV: map[string]string{}}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			if i == 0 {
				ps.Head = part
			}
			continue
		}
		ps.KV[k] = v
	}
	return ps
}

// kvList renders key=value pairs in a fixed order: the keys in order first,
// then any others sorted, so that rendering is deterministic.
func kvList(kv map[string]string, order ...string) string {
	var parts []string
	seen := map[string]bool{}
	for _, k := range order {
		if v, ok := kv[k]; ok {
			parts = append(parts, k+"="+v)
			seen[k] = true
		}
	}
	var rest []string
	for k := range kv {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, k+"="+kv[k])
	}
	return strings.Join(parts, ",")
}

// boolFlag renders a boolean as Proxmox writes it in property strings.
func boolFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// truthy reads a Proxmox boolean ("1", "on", "yes", "true").
func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "on", "yes", "true":
		return true
	}
	return false
}
