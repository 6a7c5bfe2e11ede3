package proxmox

import (
	"sort"
	"strings"
)

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
