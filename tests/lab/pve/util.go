package pve

import (
	"strconv"
	"strings"
)

func itoa(i int) string { return strconv.Itoa(i) }

func lower(s string) string { return strings.ToLower(s) }

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// splitList is PVE::Tools::split_list (commas, semicolons, whitespace).
func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n'
	})
}

// keyIndex splits "scsi12" into ("scsi", 12, true).
func keyIndex(key string) (string, int, bool) {
	i := len(key)
	for i > 0 && key[i-1] >= '0' && key[i-1] <= '9' {
		i--
	}
	if i == 0 || i == len(key) {
		return key, 0, false
	}
	n, err := strconv.Atoi(key[i:])
	if err != nil {
		return key, 0, false
	}
	return key[:i], n, true
}

// isDriveKey reports whether key names a drive (is_valid_drivename).
func isDriveKey(key string) bool {
	prefix, n, ok := keyIndex(key)
	if !ok {
		return false
	}
	switch prefix {
	case "ide":
		return n < 4
	case "sata":
		return n < 6
	case "scsi":
		return n < 31
	case "virtio":
		return n < 16
	case "efidisk", "tpmstate":
		return n == 0
	}
	return false
}
