package pveapi

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// ParseProperty parses the property-string value of parameter name (for
// example "net0" or "scsi1") with that parameter's format from the method's
// schema, exactly as validation does. It returns the keys with aliases
// resolved ("virtio=MAC" gives model=virtio, macaddr=MAC).
func (m *Method) ParseProperty(name, value string) (map[string]string, error) {
	p := m.Param(name)
	if p == nil {
		return nil, fmt.Errorf("parameter %q is not in the schema of %s %s", name, m.Method, m.Path)
	}
	props := p.Props
	if props == nil {
		props = namedFormats[p.Format]
	}
	if props == nil {
		return nil, fmt.Errorf("parameter %q of %s %s is not a property string", name, m.Method, m.Path)
	}
	return parsePropertyString(props, value, name, p.Format)
}

// ParseNamed parses a value with one of the named property-string formats
// the lab knows ("pve-qm-ipconfig", "pve-qm-smbios1", "pve-qm-boot", ...).
func ParseNamed(format, value string) (map[string]string, error) {
	props, ok := namedFormats[format]
	if !ok {
		return nil, fmt.Errorf("unknown property-string format %q", format)
	}
	return parsePropertyString(props, value, "", format)
}

// parsePropertyString follows pve-common's parse_property_string: split on
// commas, "key=value" or a bare value for the default key, aliases and key
// aliases, booleans normalised (on/yes/true -> 1), then check_object over
// the result with no additional properties allowed. Error texts are PVE's;
// each ends with a newline like Perl's die messages.
func parsePropertyString(props map[string]*Param, data, path, name string) (map[string]string, error) {
	res := map[string]string{}
	defaultKey := ""
	for _, part := range strings.Split(data, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if k, v, ok := strings.Cut(part, "="); ok && k != "" && v != "" {
			if _, dup := res[k]; dup {
				return nil, fmt.Errorf("duplicate key in comma-separated list property: %s\n", k)
			}
			schema := props[k]
			if schema != nil && schema.Alias != "" {
				if schema.KeyAlias != "" {
					if _, dup := res[schema.KeyAlias]; dup {
						return nil, fmt.Errorf("key alias '%s' is already defined\n", schema.KeyAlias)
					}
					res[schema.KeyAlias] = k
				}
				k = schema.Alias
				schema = props[k]
				if _, dup := res[k]; dup {
					return nil, fmt.Errorf("key '%s' is already defined (via alias)\n", k)
				}
			}
			if schema == nil {
				return nil, fmt.Errorf("invalid key in comma-separated list property: %s\n", k)
			}
			if schema.Type == "boolean" {
				v = parseBoolean(v)
			}
			res[k] = v
		} else if !strings.Contains(part, "=") {
			if defaultKey != "" {
				return nil, fmt.Errorf("duplicate key in comma-separated list property: %s\n", defaultKey)
			}
			for _, key := range slices.Sorted(maps.Keys(props)) {
				p := props[key]
				if !p.DefaultKey {
					continue
				}
				defaultKey = key
				if res[key] != "" {
					return nil, fmt.Errorf("duplicate key in comma-separated list property: %s\n", defaultKey)
				}
				if p.Type == "boolean" {
					part = parseBoolean(part)
				}
				res[key] = part
				break
			}
			if defaultKey == "" {
				return nil, errors.New("value without key, but schema does not define a default key\n")
			}
		} else {
			return nil, errors.New("missing key in comma-separated list property\n")
		}
	}
	errs := Errors{}
	checkObject(path, props, res, errs)
	if len(errs) > 0 {
		return nil, errors.New(formatErrors(errs))
	}
	if v := formatValidators[name]; v != nil {
		if err := v(res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// checkObject is check_object for the keys of a property string.
func checkObject(path string, props map[string]*Param, res map[string]string, errs Errors) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		p := props[k]
		if p.Alias != "" {
			continue
		}
		v, ok := res[k]
		if !ok {
			if !p.Optional {
				errs.add(join(k), "property is missing and it is not optional")
			}
			continue
		}
		s, ok := checkType(join(k), p.Type, v, errs)
		if !ok {
			continue
		}
		if msg := checkValue(join(k), p, s); msg != "" {
			errs.add(join(k), msg)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(res)) {
		p := props[k]
		if p == nil {
			continue
		}
		if p.Requires != "" {
			if _, ok := res[p.Requires]; !ok {
				errs.add(join(p.Requires), fmt.Sprintf("missing property required by '%s'", join(k)))
			}
		}
	}
}

var boolTrue = regexp.MustCompile(`^(?i:1|on|yes|true)$`)
var boolFalse = regexp.MustCompile(`^(?i:0|off|no|false)$`)

// parseBoolean is parse_boolean: it maps the usual spellings to 1/0 and
// leaves anything else for the type check to refuse.
func parseBoolean(v string) string {
	switch {
	case boolTrue.MatchString(v):
		return "1"
	case boolFalse.MatchString(v):
		return "0"
	}
	return v
}

// PrintPropertyString renders keys as PVE writes a property string back
// (print_property_string in pve-common JSONSchema.pm): the default key first
// (combined with its key alias, "virtio=BC:24:11:..."), then the mandatory
// keys, then the rest, each group sorted; disk sizes as "32G".
func PrintPropertyString(props map[string]*Param, res map[string]string) string {
	keyAlias := map[string]string{} // model -> macaddr for net's "virtio=MAC"
	defaultKey := ""
	for _, k := range slices.Sorted(maps.Keys(props)) {
		p := props[k]
		if p.DefaultKey {
			defaultKey = k
		}
		if p.KeyAlias != "" && p.Alias != "" {
			keyAlias[p.KeyAlias] = p.Alias
		}
	}
	done := map[string]bool{}
	var parts []string
	add := func(k string, isDefault bool) {
		if done[k] {
			return
		}
		done[k] = true
		v, ok := res[k]
		if !ok {
			return
		}
		p := props[k]
		if combine, ok := keyAlias[k]; ok {
			if cv, ok := res[combine]; ok {
				parts = append(parts, v+"="+cv)
				done[combine] = true
				return
			}
		}
		if p != nil && p.Format == "disk-size" {
			if n, ok := ParseSize(v); ok {
				v = FormatSize(n)
			}
		}
		if isDefault {
			parts = append(parts, v)
		} else {
			parts = append(parts, k+"="+v)
		}
	}
	if defaultKey != "" {
		add(defaultKey, true)
	}
	for _, k := range slices.Sorted(maps.Keys(res)) {
		if p := props[k]; p != nil && !p.Optional {
			add(k, false)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(res)) {
		add(k, false)
	}
	return strings.Join(parts, ",")
}
