// Command gen extracts, from the Proxmox VE API schema that pve-docs ships
// (api-viewer/apidata.js, as plain JSON in ../shared/pve-api), the paths,
// methods and parameters that the lab serves, and writes them as
// tests/lab/pveapi/schema.json, which the pveapi package embeds. The lab thus
// validates requests against the real schema without needing ../shared.
//
//	go run ./tests/lab/pveapi/gen [-in apidata-9.1.3.json] [-out tests/lab/pveapi/schema.json]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// served lists every method and path the lab answers. The generator fails
// when one of them is missing from the schema, so a schema upgrade that
// renames an endpoint is noticed here rather than at run time.
var served = []string{
	"GET /version",
	"GET /access/permissions",
	"GET /cluster/nextid",
	"GET /cluster/resources",
	"GET /cluster/status",
	"GET /cluster/tasks",
	"GET /storage",
	"GET /storage/{storage}",
	"GET /pools",
	"POST /pools",
	"PUT /pools",
	"DELETE /pools",
	"GET /pools/{poolid}",
	"PUT /pools/{poolid}",
	"DELETE /pools/{poolid}",
	"GET /nodes",
	"GET /nodes/{node}/status",
	"GET /nodes/{node}/version",
	"GET /nodes/{node}/network",
	"GET /nodes/{node}/network/{iface}",
	"GET /nodes/{node}/storage",
	"GET /nodes/{node}/storage/{storage}/status",
	"GET /nodes/{node}/storage/{storage}/content",
	"GET /nodes/{node}/storage/{storage}/content/{volume}",
	"DELETE /nodes/{node}/storage/{storage}/content/{volume}",
	"POST /nodes/{node}/storage/{storage}/download-url",
	"GET /nodes/{node}/tasks",
	"GET /nodes/{node}/tasks/{upid}",
	"DELETE /nodes/{node}/tasks/{upid}",
	"GET /nodes/{node}/tasks/{upid}/status",
	"GET /nodes/{node}/tasks/{upid}/log",
	"GET /nodes/{node}/qemu",
	"POST /nodes/{node}/qemu",
	"GET /nodes/{node}/qemu/{vmid}",
	"DELETE /nodes/{node}/qemu/{vmid}",
	"GET /nodes/{node}/qemu/{vmid}/config",
	"POST /nodes/{node}/qemu/{vmid}/config",
	"PUT /nodes/{node}/qemu/{vmid}/config",
	"GET /nodes/{node}/qemu/{vmid}/pending",
	"GET /nodes/{node}/qemu/{vmid}/status",
	"GET /nodes/{node}/qemu/{vmid}/status/current",
	"POST /nodes/{node}/qemu/{vmid}/status/start",
	"POST /nodes/{node}/qemu/{vmid}/status/stop",
	"POST /nodes/{node}/qemu/{vmid}/status/shutdown",
	"POST /nodes/{node}/qemu/{vmid}/status/reboot",
	"POST /nodes/{node}/qemu/{vmid}/status/reset",
	"POST /nodes/{node}/qemu/{vmid}/status/suspend",
	"POST /nodes/{node}/qemu/{vmid}/status/resume",
	"POST /nodes/{node}/qemu/{vmid}/clone",
	"GET /nodes/{node}/qemu/{vmid}/migrate",
	"POST /nodes/{node}/qemu/{vmid}/migrate",
	"PUT /nodes/{node}/qemu/{vmid}/resize",
	"POST /nodes/{node}/qemu/{vmid}/move_disk",
	"POST /nodes/{node}/qemu/{vmid}/template",
	"PUT /nodes/{node}/qemu/{vmid}/unlink",
	"GET /nodes/{node}/qemu/{vmid}/cloudinit",
	"PUT /nodes/{node}/qemu/{vmid}/cloudinit",
	"GET /nodes/{node}/qemu/{vmid}/cloudinit/dump",
	"GET /nodes/{node}/qemu/{vmid}/agent",
	"POST /nodes/{node}/qemu/{vmid}/agent",
	"POST /nodes/{node}/qemu/{vmid}/agent/ping",
	"GET /nodes/{node}/qemu/{vmid}/agent/get-osinfo",
	"GET /nodes/{node}/qemu/{vmid}/agent/get-host-name",
	"GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
	"GET /nodes/{node}/qemu/{vmid}/agent/info",
	"POST /nodes/{node}/qemu/{vmid}/agent/shutdown",
}

// indexed gives, for each "prefix[n]" parameter name of the schema, how many
// indices the real server accepts (n is 0 to count-1). apidata.js folds
// net0..net31 into one "net[n]" entry; the counts come from qemu-server:
// src/PVE/QemuServer.pm ($MAX_NETS, $MAX_SERIAL_PORTS, $MAX_PARALLEL_PORTS),
// src/PVE/QemuServer/Drive.pm ($MAX_*_DISKS), Memory.pm ($MAX_NUMA),
// PCI.pm ($MAX_HOSTPCI_DEVICES), USB.pm ($MAX_USB_DEVICES), Virtiofs.pm.
// ipconfig[n] follows the NICs ($MAX_NETS).
var indexed = map[string]int{
	"net": 32, "ipconfig": 32, "ide": 4, "sata": 6, "scsi": 31, "virtio": 16,
	"unused": 256, "serial": 4, "parallel": 3, "numa": 8, "hostpci": 16,
	"usb": 14, "virtiofs": 10, "mp": 256, "dev": 256,
}

// Param is the subset of a schema parameter the validator needs.
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
	Props      map[string]*Param `json:"props,omitempty"` // a property-string format given inline
	Default    any               `json:"default,omitempty"`
	DefaultKey bool              `json:"default_key,omitempty"`
	Alias      string            `json:"alias,omitempty"`
	KeyAlias   string            `json:"keyAlias,omitempty"`
	Requires   string            `json:"requires,omitempty"`
	Count      int               `json:"count,omitempty"` // for "prefix[n]" names: number of indices
}

// Method is one served method of one path.
type Method struct {
	Path     string            `json:"path"`
	Method   string            `json:"method"`
	AllowAny bool              `json:"additionalProperties,omitempty"`
	Params   map[string]*Param `json:"params"`
	// Permissions is the schema's permission entry without its description:
	// "check" (the test PVE::RPCEnvironment::check_api2_permissions runs)
	// and "user" ("all": any authenticated user, the handler checks).
	Permissions *Permissions `json:"permissions,omitempty"`
	// NoToken: the method refuses API tokens (allowtoken 0).
	NoToken bool `json:"noToken,omitempty"`
}

// Permissions is a method's permission entry.
type Permissions struct {
	Check json.RawMessage `json:"check,omitempty"`
	User  string          `json:"user,omitempty"`
}

type node struct {
	Path     string          `json:"path"`
	Info     map[string]info `json:"info"`
	Children []node          `json:"children"`
}

type info struct {
	Permissions *Permissions `json:"permissions"`
	AllowToken  any          `json:"allowtoken"`
	Parameters  struct {
		AdditionalProperties any                        `json:"additionalProperties"`
		Properties           map[string]json.RawMessage `json:"properties"`
	} `json:"parameters"`
}

func main() {
	in := flag.String("in", "/work/shared/pve-api/apidata-9.1.3.json", "apidata JSON (pve-docs api-viewer, JavaScript wrapper removed)")
	out := flag.String("out", filepath.Join("tests", "lab", "pveapi", "schema.json"), "output file")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "pveapi/gen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error { return generate(in, out, served) }

func generate(in, out string, endpoints []string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("read the PVE API schema: %w (pass -in with the path to apidata-9.1.3.json)", err)
	}
	var roots []node
	if err := json.Unmarshal(raw, &roots); err != nil {
		return fmt.Errorf("parse %s: %w", in, err)
	}
	byPath := map[string]node{}
	var walk func(n node)
	walk = func(n node) {
		byPath[n.Path] = n
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}

	var methods []Method
	for _, s := range endpoints {
		verb, path, _ := strings.Cut(s, " ")
		n, ok := byPath[path]
		if !ok {
			return fmt.Errorf("path %s is not in %s", path, in)
		}
		inf, ok := n.Info[verb]
		if !ok {
			return fmt.Errorf("method %s of %s is not in %s", verb, path, in)
		}
		m := Method{Path: path, Method: verb, Params: map[string]*Param{}, Permissions: inf.Permissions}
		if inf.Permissions == nil || (inf.Permissions.Check == nil && inf.Permissions.User == "") {
			// check_api2_permissions: no entry means root@pam only.
			m.Permissions = nil
		}
		if v, ok := inf.AllowToken.(float64); ok && v == 0 {
			m.NoToken = true
		}
		if v, ok := inf.Parameters.AdditionalProperties.(float64); ok && v == 1 {
			m.AllowAny = true
		}
		for name, rawp := range inf.Parameters.Properties {
			p, err := convert(rawp, path+" "+name)
			if err != nil {
				return err
			}
			if prefix, ok := strings.CutSuffix(name, "[n]"); ok {
				c, ok := indexed[prefix]
				if !ok {
					return fmt.Errorf("%s %s: no index count known for %q; add it to indexed", verb, path, name)
				}
				p.Count = c
			}
			m.Params[name] = p
		}
		methods = append(methods, m)
	}
	sort.Slice(methods, func(i, j int) bool {
		if methods[i].Path != methods[j].Path {
			return methods[i].Path < methods[j].Path
		}
		return methods[i].Method < methods[j].Method
	})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Source  string   `json:"source"`
		Methods []Method `json:"methods"`
	}{Source: filepath.Base(in), Methods: methods}); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// convert turns one raw schema parameter into a Param, refusing shapes the
// validator does not implement (so they are noticed when the schema grows).
func convert(raw json.RawMessage, where string) (*Param, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	p := &Param{}
	for k, v := range r {
		var err error
		switch k {
		case "description", "verbose_description", "typetext", "format_description", "title":
		case "type":
			var t any
			err = json.Unmarshal(v, &t)
			if s, ok := t.(string); ok {
				p.Type = s
			} else if t != nil {
				err = fmt.Errorf("type %s not supported", v)
			}
		case "optional":
			p.Optional = truthy(v)
		case "default_key":
			p.DefaultKey = truthy(v)
		case "enum":
			var vals []any
			if err = json.Unmarshal(v, &vals); err == nil {
				for _, e := range vals {
					p.Enum = append(p.Enum, fmt.Sprint(e))
				}
			}
		case "minimum":
			p.Minimum, err = number(v)
		case "maximum":
			p.Maximum, err = number(v)
		case "minLength":
			var i int
			err = json.Unmarshal(v, &i)
			p.MinLength = &i
		case "maxLength":
			var i int
			err = json.Unmarshal(v, &i)
			p.MaxLength = &i
		case "pattern":
			err = json.Unmarshal(v, &p.Pattern)
			if err == nil {
				p.Pattern = goRegexp(p.Pattern)
				_, err = regexp.Compile("^(?:" + p.Pattern + ")$")
			}
		case "format":
			var s string
			if json.Unmarshal(v, &s) == nil {
				p.Format = s
				break
			}
			var sub map[string]json.RawMessage
			if err = json.Unmarshal(v, &sub); err != nil {
				break
			}
			p.Props = map[string]*Param{}
			for sk, sv := range sub {
				if p.Props[sk], err = convert(sv, where+"."+sk); err != nil {
					return nil, err
				}
			}
		case "default":
			err = json.Unmarshal(v, &p.Default)
		case "alias":
			err = json.Unmarshal(v, &p.Alias)
		case "keyAlias":
			err = json.Unmarshal(v, &p.KeyAlias)
		case "requires":
			err = json.Unmarshal(v, &p.Requires)
		default:
			err = fmt.Errorf("schema key %q is not supported by the lab's validator", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", where, k, err)
		}
	}
	return p, nil
}

// goRegexp rewrites the Perl-only constructs that stringified qr// patterns
// carry into RE2 syntax: "(?^:" (default flags) and "(?^i:" become "(?:" and
// "(?i:"; atomic groups "(?>" become plain groups, which match the same
// strings (they only limit backtracking).
func goRegexp(p string) string {
	p = strings.ReplaceAll(p, "(?^i:", "(?i:")
	p = strings.ReplaceAll(p, "(?^:", "(?:")
	return strings.ReplaceAll(p, "(?>", "(?:")
}

// number reads a bound that the schema gives as a number or, in a few places
// (Perl stringified it), as a string.
func number(v json.RawMessage) (*float64, error) {
	var f float64
	if err := json.Unmarshal(v, &f); err == nil {
		return &f, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, err
	}
	_, err := fmt.Sscanf(s, "%g", &f)
	return &f, err
}

func truthy(v json.RawMessage) bool {
	s := strings.TrimSpace(string(v))
	return s == "1" || s == "true"
}
