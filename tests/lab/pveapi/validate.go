package pveapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Errors maps a parameter name to PVE's message for it, the "errors" object
// of a 400 answer ({"errors":{"vmid":"..."},"message":"Parameter
// verification failed.\n"}).
type Errors map[string]string

// VerificationFailed is the message PVE puts in the status line and body of
// a 400 answer (pve-common src/PVE/JSONSchema.pm, sub validate).
const VerificationFailed = "Parameter verification failed."

// add records msg for path, joining several messages for one path the way
// JSONSchema.pm's add_error does (with a literal backslash-n: it joins with
// single-quoted '\n').
func (e Errors) add(path, msg string) {
	if path == "" {
		path = "_root"
	}
	if old, ok := e[path]; ok {
		e[path] = old + `\n` + msg
		return
	}
	e[path] = msg
}

// Validate checks request parameters against the method's schema like
// PVE::JSONSchema::validate (check_object with additionalProperties 0).
// Values are what a request decodes to: string, json.Number, bool, nil,
// []any or map[string]any. On success it returns the parameters as
// strings, booleans as "1"/"0", as PVE's handlers see them.
func (m *Method) Validate(in map[string]any) (map[string]string, Errors) {
	errs := Errors{}
	out := map[string]string{}
	present := map[string]bool{}
	for k, v := range in {
		if v != nil {
			present[k] = true
		}
	}
	// Declared parameters, including missing mandatory ones.
	for name, p := range m.Params {
		if p.Count > 0 {
			continue
		}
		checkParam(name, p, in[name], out, errs)
	}
	for name, v := range in {
		p := m.Param(name)
		if p == nil {
			if !m.AllowAny {
				errs.add(name, "property is not defined in schema and the schema does not allow additional properties")
			} else if s, ok := scalar(v); ok {
				out[name] = s
			}
			continue
		}
		if p.Count > 0 {
			checkParam(name, p, v, out, errs)
		}
		if p.Requires != "" && present[name] && !present[p.Requires] {
			errs.add(p.Requires, fmt.Sprintf("missing property required by '%s'", name))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// checkParam is JSONSchema.pm's check_prop for one top-level parameter.
func checkParam(name string, p *Param, v any, out map[string]string, errs Errors) {
	if v == nil {
		if !p.Optional {
			errs.add(name, "property is missing and it is not optional")
		}
		return
	}
	s, ok := checkType(name, p.Type, v, errs)
	if !ok {
		return
	}
	if msg := checkValue(name, p, s); msg != "" {
		errs.add(name, msg)
		return
	}
	out[name] = s
}

// checkType mirrors check_type: booleans are only 0/1 (or a JSON boolean),
// a JSON boolean or structure is refused where a scalar is expected.
func checkType(path, typ string, v any, errs Errors) (string, bool) {
	switch x := v.(type) {
	case bool:
		if typ == "boolean" {
			if x {
				return "1", true
			}
			return "0", true
		}
		if typ == "" || typ == "any" {
			return fmt.Sprint(x), true
		}
		errs.add(path, fmt.Sprintf("type check ('%s') failed - got JSON::PP::Boolean", typ))
		return "", false
	case []any:
		if typ == "array" {
			return "", true
		}
		errs.add(path, fmt.Sprintf("type check ('%s') failed - got ARRAY", typ))
		return "", false
	case map[string]any:
		if typ == "object" {
			return "", true
		}
		errs.add(path, fmt.Sprintf("type check ('%s') failed - got HASH", typ))
		return "", false
	}
	s, _ := scalar(v)
	switch typ {
	case "boolean":
		if s != "0" && s != "1" {
			errs.add(path, fmt.Sprintf("type check ('%s') failed - got '%s'", typ, s))
			return "", false
		}
	case "integer":
		if !isInteger(s) {
			errs.add(path, fmt.Sprintf("type check ('%s') failed - got '%s'", typ, s))
			return "", false
		}
	case "number":
		if !isNumber(s) {
			errs.add(path, fmt.Sprintf("type check ('%s') failed - got '%s'", typ, s))
			return "", false
		}
	case "array", "object":
		errs.add(path, fmt.Sprintf("type check ('%s') failed", typ))
		return "", false
	}
	return s, true
}

// scalar renders a decoded JSON or form value as the string Perl would see.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		// Perl prints an integral number without a fraction (2.0 -> "2").
		if f, ok := new(big.Float).SetString(string(x)); ok && f.IsInt() {
			i, _ := f.Int(nil)
			return i.String(), true
		}
		return string(x), true
	case bool:
		if x {
			return "1", true
		}
		return "0", true
	}
	return "", false
}

var (
	integerRE = regexp.MustCompile(`^[+-]?\d+$`)
	numberRE  = regexp.MustCompile(`^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$`)
)

func isInteger(s string) bool { return integerRE.MatchString(s) }
func isNumber(s string) bool  { return numberRE.MatchString(s) }

// checkValue runs the scalar checks of check_prop in its order: format,
// pattern, maxLength, minLength, maximum, minimum, enum. It returns the
// error message or "".
func checkValue(path string, p *Param, s string) string {
	if p.Props != nil {
		if _, err := parsePropertyString(p.Props, s, path, ""); err != nil {
			return "invalid format - " + err.Error()
		}
	} else if p.Format != "" {
		if err := CheckFormat(p.Format, s, path); err != nil {
			return "invalid format - " + err.Error()
		}
	}
	if p.Pattern != "" && !compiled(p.Pattern).MatchString(s) {
		return "value does not match the regex pattern"
	}
	if p.MaxLength != nil && len([]rune(s)) > *p.MaxLength {
		return fmt.Sprintf("value may only be %d characters long", *p.MaxLength)
	}
	if p.MinLength != nil && len([]rune(s)) < *p.MinLength {
		return fmt.Sprintf("value must be at least %d characters long", *p.MinLength)
	}
	if isNumber(s) {
		f, _, _ := big.ParseFloat(s, 10, 128, big.ToNearestEven)
		if p.Maximum != nil && f.Cmp(big.NewFloat(*p.Maximum)) > 0 {
			return fmt.Sprintf("value must have a maximum value of %s", perlNum(*p.Maximum))
		}
		if p.Minimum != nil && f.Cmp(big.NewFloat(*p.Minimum)) < 0 {
			return fmt.Sprintf("value must have a minimum value of %s", perlNum(*p.Minimum))
		}
	}
	if len(p.Enum) > 0 {
		for _, e := range p.Enum {
			if e == s {
				return ""
			}
		}
		return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", s, strings.Join(p.Enum, ", "))
	}
	return ""
}

func perlNum(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprint(f)
}

var (
	reMu    sync.Mutex
	reCache = map[string]*regexp.Regexp{}
)

// compiled anchors a schema pattern like JSONSchema.pm (m/^$pattern$/).
func compiled(pattern string) *regexp.Regexp {
	reMu.Lock()
	defer reMu.Unlock()
	re, ok := reCache[pattern]
	if !ok {
		re = regexp.MustCompile("^(?:" + pattern + ")$")
		reCache[pattern] = re
	}
	return re
}

// formatErrors renders a nested error map the way PVE::Exception stringifies
// "format error" (one "path: message" line each).
func formatErrors(errs Errors) string {
	var b strings.Builder
	b.WriteString("format error\n")
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		fmt.Fprintf(&b, "%s: %s\n", k, errs[k])
	}
	return b.String()
}
