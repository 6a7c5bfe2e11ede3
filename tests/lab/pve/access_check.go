package pve

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pveapi"
)

// checkAPI2Locked is RPCEnvironment.pm check_api2_permissions: the test the
// schema gives a method, run before the method's handler (pve-manager
// PVE/HTTPServer.pm rest_handler runs it after merging the parameters and
// before proxying to the node). root@pam passes everything; a method
// without permissions is root@pam's only; user "all" leaves the checks to
// the handler.
func (s *Server) checkAPI2Locked(m *pveapi.Method, relURI, id string, params map[string]any) error {
	if m.NoToken {
		if _, _, ok := splitTokenID(id); ok {
			return permError("URI '" + relURI + "' not available with API token, need proper ticket.\n")
		}
	}
	if id == "root@pam" {
		return nil
	}
	perm := m.Permissions
	switch {
	case perm == nil:
		return permError("user != root@pam")
	case perm.User == "all":
		return nil
	case perm.Check != nil:
		_, err := s.execCheckLocked(perm.Check, id, params, false)
		return err
	}
	return permError("")
}

// execCheckLocked is exec_api2_perm_check. With noerr a failed test reports
// false instead of an error.
func (s *Server) execCheckLocked(c *pveapi.Check, id string, params map[string]any, noerr bool) (bool, error) {
	refuse := func(err error) (bool, error) {
		if noerr {
			return false, nil
		}
		return false, err
	}
	switch c.Op {
	case "and":
		for _, sub := range c.Sub {
			if _, err := s.execCheckLocked(sub, id, params, false); err != nil {
				return false, err
			}
		}
		return true, nil
	case "or":
		for _, sub := range c.Sub {
			if ok, _ := s.execCheckLocked(sub, id, params, true); ok {
				return true, nil
			}
		}
		return refuse(permError(""))
	case "perm":
		if c.RequireParam != "" && params[c.RequireParam] == nil {
			return refuse(permError(""))
		}
		path := normalizeACLPath(templateReplace(c.Path, params))
		check := s.checkLocked
		if c.Any {
			check = s.checkAnyLocked
		}
		if err := check(id, path, c.Privs...); err != nil {
			return refuse(err)
		}
		return true, nil
	case "perm-modify":
		path := normalizeACLPath(templateReplace(c.Path, params))
		if path == "" {
			return false, nil
		}
		if err := s.checkPermModifyLocked(id, path); err != nil {
			return refuse(err)
		}
		return true, nil
	}
	// userid-param and userid-group guard the user administration API,
	// which the lab does not serve.
	return false, fail("lab: permission test %q is not implemented\n", c.Op)
}

// templateReplace is PVE::Tools::template_replace: "{name}" becomes the
// parameter's value, or "-" when it is missing or false in Perl's eyes.
func templateReplace(tmpl string, params map[string]any) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		j := strings.IndexByte(tmpl[max(i, 0):], '}')
		if i < 0 || j < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		b.WriteString(tmpl[:i])
		v := scalarParam(params[tmpl[i+1:i+j]])
		if v == "" || v == "0" {
			v = "-"
		}
		b.WriteString(v)
		tmpl = tmpl[i+j+1:]
	}
}

// scalarParam renders a decoded request parameter as the handler sees it.
func scalarParam(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(v)
}
