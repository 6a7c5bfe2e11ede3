package pve

import (
	"strconv"
	"strings"
)

// PropString is a Proxmox property string such as
// "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=10" or
// "local-lvm:vm-104-disk-0,iothread=1,size=20G": a list of key=value pairs,
// where the first item may be a bare value for the format's default key.
type PropString struct {
	// Head is the first item when it has no '=' (the default key's value).
	Head string
	KV   map[string]string
}

// ParsePropString splits a property string into its head and pairs.
func ParsePropString(s string) PropString {
	ps := PropString{KV: map[string]string{}}
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

// Value is key's value, or the head when key is absent: the head is how
// Proxmox writes the default key ("4096" is memory "current=4096", "host" is
// cpu "cputype=host").
func (p PropString) Value(key string) string {
	if v, ok := p.KV[key]; ok {
		return v
	}
	return p.Head
}

// SplitTags reads Proxmox's tag list, separated by ';' (pve-common's tag
// parsing also accepts ',' and spaces on input).
func SplitTags(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

// DiskSizeGiB reads a Proxmox disk size with a K, M, G or T suffix, or in
// bytes without one, as GiB; 0 when it cannot be read.
func DiskSizeGiB(s string) float64 {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	mult := map[byte]float64{'K': 1.0 / (1 << 20), 'M': 1.0 / 1024, 'G': 1, 'T': 1024}
	f, ok := mult[s[len(s)-1]]
	num := s[:len(s)-1]
	if !ok {
		f, num = 1.0/(1<<30), s // bytes
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0
	}
	return v * f
}
