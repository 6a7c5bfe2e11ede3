package proxmox

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// unknowns lists the paths of inputs whose values are not known yet (outputs
// of resources not yet created, during preview). Decoded inputs hold zero
// values there, which must not be validated as if the user wrote them.
type unknowns map[string]bool

func unknownPaths(m property.Map) unknowns {
	u := unknowns{}
	for k, v := range m.All {
		u.walk(k, v)
	}
	return u
}

func (u unknowns) walk(path string, v property.Value) {
	switch {
	case v.IsComputed():
		u[path] = true
	case v.IsMap():
		for k, e := range v.AsMap().All {
			u.walk(path+"."+k, e)
		}
	case v.IsArray():
		for i, e := range v.AsArray().All {
			u.walk(fmt.Sprintf("%s[%d]", path, i), e)
		}
	}
}

// known reports whether path and all its ancestors are known.
func (u unknowns) known(path string) bool {
	if u[path] {
		return false
	}
	for _, a := range ancestors(path) {
		if u[a] {
			return false
		}
	}
	return true
}

// anyUnder reports whether something at or below path is unknown.
func (u unknowns) anyUnder(path string) bool {
	for k := range u {
		if k == path || len(k) > len(path) && k[:len(path)] == path && (k[len(path)] == '.' || k[len(path)] == '[') {
			return true
		}
	}
	return !u.known(path)
}
