package proxmox

import (
	"fmt"
	"reflect"
	"strings"
)

// flatten renders v as property path -> leaf value, with paths in the
// schema's names ("cpu.cores", "disks[0].size"). Unset optional values are
// absent; an empty list is recorded as "[]" so that it differs from unset.
func flatten(v any) map[string]string {
	out := map[string]string{}
	flattenValue("", reflect.ValueOf(v), out)
	return out
}

func flattenValue(path string, v reflect.Value, out map[string]string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			flattenValue(path, v.Elem(), out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("pulumi"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			flattenValue(p, v.Field(i), out)
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		if v.Len() == 0 {
			out[path] = "[]"
		}
		for i := 0; i < v.Len(); i++ {
			flattenValue(fmt.Sprintf("%s[%d]", path, i), v.Index(i), out)
		}
	default:
		out[path] = fmt.Sprint(v.Interface())
	}
}

// ancestors lists the paths that contain p, shortest first:
// "disks[1].size" -> "disks", "disks[1]".
func ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '.' || p[i] == '[' {
			out = append(out, p[:i])
		}
	}
	return out
}

// hasUnder reports whether any key of m is prefix or lies under it.
func hasUnder(m map[string]string, prefix string) bool {
	for k := range m {
		if k == prefix || strings.HasPrefix(k, prefix+".") || strings.HasPrefix(k, prefix+"[") {
			return true
		}
	}
	return false
}
