package pveapi

import (
	"encoding/json"
	"fmt"
)

// Permissions is a method's "permissions" entry in the schema: User "all"
// lets any authenticated user in (the handler checks what it must), Check is
// the test PVE::RPCEnvironment::check_api2_permissions runs before the
// handler (pve-access-control src/PVE/RPCEnvironment.pm).
type Permissions struct {
	Check *Check `json:"check,omitempty"`
	User  string `json:"user,omitempty"`
}

// Check is one permission test (exec_api2_perm_check).
type Check struct {
	// Op is "perm", "and", "or", "perm-modify", "userid-param" or
	// "userid-group".
	Op string
	// Path is the ACL path template of "perm" and "perm-modify"
	// ("/vms/{vmid}").
	Path string
	// Privs are the privileges "perm" and "userid-group" test.
	Privs []string
	// Any: one of Privs is enough ("perm" option any => 1).
	Any bool
	// RequireParam: "perm" fails when this parameter is missing.
	RequireParam string
	// Sub are the tests of "and" and "or".
	Sub []*Check
	// Arg is "userid-param"'s subtest ("self", "Realm.AllocateUser") or
	// "userid-group"'s groups_param option.
	Arg string
}

// UnmarshalJSON reads the schema's array form, for example
// ["perm", "/vms/{vmid}", ["VM.Audit"], "any", 1].
func (c *Check) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return fmt.Errorf("permission check %s: %w", b, err)
	}
	if len(parts) == 0 || json.Unmarshal(parts[0], &c.Op) != nil {
		return fmt.Errorf("permission check %s: no test name", b)
	}
	rest := parts[1:]
	switch c.Op {
	case "and", "or":
		for _, p := range rest {
			sub := &Check{}
			if err := json.Unmarshal(p, sub); err != nil {
				return err
			}
			c.Sub = append(c.Sub, sub)
		}
		return nil
	case "perm":
		if len(rest) < 2 || json.Unmarshal(rest[0], &c.Path) != nil || json.Unmarshal(rest[1], &c.Privs) != nil {
			return fmt.Errorf("permission check %s: want path and privileges", b)
		}
		return c.options(rest[2:], b)
	case "perm-modify":
		if len(rest) != 1 || json.Unmarshal(rest[0], &c.Path) != nil {
			return fmt.Errorf("permission check %s: want a path", b)
		}
		return nil
	case "userid-param":
		if len(rest) != 1 || json.Unmarshal(rest[0], &c.Arg) != nil {
			return fmt.Errorf("permission check %s: want a subtest", b)
		}
		return nil
	case "userid-group":
		if len(rest) < 1 || json.Unmarshal(rest[0], &c.Privs) != nil {
			return fmt.Errorf("permission check %s: want privileges", b)
		}
		return c.options(rest[1:], b)
	}
	return fmt.Errorf("permission check %s: unknown test %q", b, c.Op)
}

// options reads the key/value pairs after a test's arguments.
func (c *Check) options(kv []json.RawMessage, b []byte) error {
	if len(kv)%2 != 0 {
		return fmt.Errorf("permission check %s: options come in pairs", b)
	}
	for i := 0; i < len(kv); i += 2 {
		var k string
		if json.Unmarshal(kv[i], &k) != nil {
			return fmt.Errorf("permission check %s: option name", b)
		}
		var v any
		_ = json.Unmarshal(kv[i+1], &v)
		switch k {
		case "any":
			c.Any = fmt.Sprint(v) == "1"
		case "require_param":
			c.RequireParam = fmt.Sprint(v)
		case "groups_param":
			c.Arg = fmt.Sprint(v)
		default:
			return fmt.Errorf("permission check %s: unknown option %q", b, k)
		}
	}
	return nil
}
