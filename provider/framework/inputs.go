package framework

import (
	"fmt"
	"regexp"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// Input paths name a component's inputs as a user wrote them
// (`network.subnet`, `registryMirrors["docker.io"].endpoints[0]`), for the
// construct guards' decisions and their errors.

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// JoinInputPath appends a key: `.key`, or `["key"]` for map keys such as
// registry hosts.
func JoinInputPath(path, key string) string {
	if identifier.MatchString(key) {
		return path + "." + key
	}
	return fmt.Sprintf("%s[%q]", path, key)
}

// UnknownInputs lists the paths of unknown values in the inputs, except
// below the paths mayBeUnknown accepts.
func UnknownInputs(m property.Map, mayBeUnknown func(path string) bool) []string {
	var out []string
	var walk func(path string, v property.Value)
	walk = func(path string, v property.Value) {
		switch {
		case mayBeUnknown(path):
		case v.IsComputed():
			out = append(out, path)
		case v.IsMap():
			v.AsMap().AllStable(func(k string, e property.Value) bool {
				walk(JoinInputPath(path, k), e)
				return true
			})
		case v.IsArray():
			v.AsArray().All(func(i int, e property.Value) bool {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
				return true
			})
		}
	}
	m.AllStable(func(k string, v property.Value) bool {
		walk(k, v)
		return true
	})
	return out
}

// UnwrapInputs returns m without dependencies or secret wrappers, calling
// secret for each secret with its input path and its unwrapped value, and
// unknown for each unknown value: it returns what stands in its place and
// whether to keep the entry at all.
func UnwrapInputs(m property.Map, secret func(path string, v property.Value), unknown func(path string, v property.Value) (property.Value, bool)) property.Map {
	var walk func(path string, v property.Value) (property.Value, bool)
	walk = func(path string, v property.Value) (property.Value, bool) {
		if v.Secret() {
			v = v.WithSecret(false)
			secret(path, v)
		}
		if v.IsComputed() {
			return unknown(path, v)
		}
		v = v.WithDependencies(nil)
		switch {
		case v.IsMap():
			out := map[string]property.Value{}
			v.AsMap().AllStable(func(k string, e property.Value) bool {
				if n, keep := walk(JoinInputPath(path, k), e); keep {
					out[k] = n
				}
				return true
			})
			return property.New(property.NewMap(out)), true
		case v.IsArray():
			out := []property.Value{}
			v.AsArray().All(func(i int, e property.Value) bool {
				if n, keep := walk(fmt.Sprintf("%s[%d]", path, i), e); keep {
					out = append(out, n)
				}
				return true
			})
			return property.New(property.NewArray(out)), true
		}
		return v, true
	}
	out := map[string]property.Value{}
	m.AllStable(func(k string, v property.Value) bool {
		if n, keep := walk(k, v); keep {
			out[k] = n
		}
		return true
	})
	return property.NewMap(out)
}
