// Package pveapi holds the part of the Proxmox VE API schema that the lab
// serves (generated from pve-docs' apidata by ./gen and embedded), and a
// validator that checks request parameters the way pve-common's
// PVE::JSONSchema does, with the same error texts.
package pveapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

//go:generate go run ./gen -out schema.json

//go:embed schema.json
var schemaJSON []byte

// Param is one parameter (or one key of a property string) of the schema.
type Param struct {
	Type       string            `json:"type,omitempty"`
	Optional   bool              `json:"optional,omitempty"`
	Enum       []string          `json:"enum,omitempty"`
	Minimum    *float64          `json:"minimum,omitempty"`
	Maximum    *float64          `json:"maximum,omitempty"`
	MinLength  *int              `json:"minLength,omitempty"`
	MaxLength  *int              `json:"maxLength,omitempty"`
	Pattern    string            `json:"pattern,omitempty"`
	Format     string            `json:"format,omitempty"`
	Props      map[string]*Param `json:"props,omitempty"`
	Default    any               `json:"default,omitempty"`
	DefaultKey bool              `json:"default_key,omitempty"`
	Alias      string            `json:"alias,omitempty"`
	KeyAlias   string            `json:"keyAlias,omitempty"`
	Requires   string            `json:"requires,omitempty"`
	Count      int               `json:"count,omitempty"`
}

// Method is one method of one API path with its parameters.
type Method struct {
	Path     string            `json:"path"`
	Method   string            `json:"method"`
	AllowAny bool              `json:"additionalProperties,omitempty"`
	Params   map[string]*Param `json:"params"`
	// Permissions is nil where the schema has none: root@pam only.
	Permissions *Permissions `json:"permissions,omitempty"`
	// NoToken: API tokens are refused (allowtoken 0).
	NoToken  bool `json:"noToken,omitempty"`
	segments []string
}

// Schema is the served subset of the API.
type Schema struct {
	Source  string    `json:"source"`
	Methods []*Method `json:"methods"`
}

var (
	loadOnce sync.Once
	loaded   *Schema
	loadErr  error
)

// Load returns the embedded schema.
func Load() (*Schema, error) {
	loadOnce.Do(func() {
		var s Schema
		if err := json.Unmarshal(schemaJSON, &s); err != nil {
			loadErr = fmt.Errorf("pveapi: embedded schema.json is malformed (re-run go run ./tests/lab/pveapi/gen): %w", err)
			return
		}
		for _, m := range s.Methods {
			m.segments = strings.Split(strings.Trim(m.Path, "/"), "/")
		}
		loaded = &s
	})
	return loaded, loadErr
}

// Find returns the method that serves verb on path, and the values of the
// path's {placeholders}. Literal segments win over placeholders, as in
// PVE::RESTHandler::find_handler.
func (s *Schema) Find(verb, path string) (*Method, map[string]string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	// Storage content volumes contain slashes ("local:iso/x.iso"):
	// pve-storage registers .../content with fragmentDelimiter '' so the rest
	// of the path is one {volume} (src/PVE/API2/Storage/Status.pm).
	if len(segs) > 6 && segs[0] == "nodes" && segs[2] == "storage" && segs[4] == "content" {
		segs = append(segs[:5:5], strings.Join(segs[5:], "/"))
	}
	var best *Method
	bestLiterals := -1
	for _, m := range s.Methods {
		if m.Method != verb || len(m.segments) != len(segs) {
			continue
		}
		literals, ok := 0, true
		for i, t := range m.segments {
			if strings.HasPrefix(t, "{") {
				if segs[i] == "" {
					ok = false
					break
				}
				continue
			}
			if t != segs[i] {
				ok = false
				break
			}
			literals++
		}
		if ok && literals > bestLiterals {
			best, bestLiterals = m, literals
		}
	}
	if best == nil {
		return nil, nil
	}
	vars := map[string]string{}
	for i, t := range best.segments {
		if strings.HasPrefix(t, "{") {
			vars[strings.Trim(t, "{}")] = segs[i]
		}
	}
	return best, vars
}

// Method returns the served method for verb and a path template such as
// "/nodes/{node}/qemu", or nil.
func (s *Schema) Method(verb, template string) *Method {
	for _, m := range s.Methods {
		if m.Method == verb && m.Path == template {
			return m
		}
	}
	return nil
}

// Param returns the schema of a parameter by its wire name, resolving
// indexed names: "net3" is "net[n]" when 3 is within the real index range.
func (m *Method) Param(name string) *Param {
	if p, ok := m.Params[name]; ok {
		return p
	}
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || i == 0 {
		return nil
	}
	digits := name[i:]
	if len(digits) > 1 && digits[0] == '0' {
		return nil
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return nil
	}
	p, ok := m.Params[name[:i]+"[n]"]
	if !ok || n >= p.Count {
		return nil
	}
	return p
}
