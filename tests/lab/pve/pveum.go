package pve

import (
	"fmt"
	"slices"
	"strings"
)

// Pveum runs one pveum command line against the lab, as root@pam on a
// node would (pve-access-control src/PVE/CLI/pveum.pm): the recipes written
// for a real host work unchanged. Supported:
//
//	user add <userid> [--groups <g,...>] [--enable 0|1]
//	user modify <userid> --enable 0|1
//	user token add <userid> <name> [--privsep 0|1]     (prints the full token)
//	user token remove <userid> <name>
//	group add <group>
//	role add <role> --privs "<priv>,..."
//	acl modify|delete <path> --roles <r,...> [--users|--groups|--tokens <id,...>] [--propagate 0|1]
//
// and the aliases useradd, groupadd, roleadd, aclmod, acldel. A leading
// "pveum" is ignored; options take one or two dashes and "=" or a space.
// The answer is what the command prints that a script needs: the full
// token "USER@REALM!NAME=SECRET" for token add, nothing otherwise.
func (s *Server) Pveum(line string) (string, error) {
	words, err := shellWords(line)
	if err != nil {
		return "", fmt.Errorf("pveum: %w", err)
	}
	if len(words) > 0 && words[0] == "pveum" {
		words = words[1:]
	}
	if len(words) > 0 {
		if alias, ok := map[string][]string{"useradd": {"user", "add"}, "usermod": {"user", "modify"},
			"groupadd": {"group", "add"}, "roleadd": {"role", "add"}, "aclmod": {"acl", "modify"},
			"acldel": {"acl", "delete"}}[words[0]]; ok {
			words = append(alias, words[1:]...)
		}
	}
	args, opts, err := pveumArgs(words)
	if err != nil {
		return "", fmt.Errorf("pveum %s: %w", line, err)
	}
	known := func(names ...string) error {
		for k := range opts {
			if !slices.Contains(names, k) {
				return fmt.Errorf("pveum: option --%s is not supported by `pveum %s` in the lab", k, strings.Join(args[:min(len(args), 3)], " "))
			}
		}
		return nil
	}
	cmd := strings.Join(args[:min(len(args), 2)], " ")
	if cmd == "user token" {
		cmd = strings.Join(args[:min(len(args), 3)], " ")
	}
	want := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("pveum %s: wrong number of arguments", cmd)
		}
		return nil
	}
	switch cmd {
	case "user add":
		if err := first(want(3), known("groups", "enable", "comment", "email", "firstname", "lastname")); err != nil {
			return "", err
		}
		if err := s.AddUser(args[2], splitPrivs([]string{opts["groups"]})...); err != nil {
			return "", err
		}
		if v, ok := opts["enable"]; ok {
			return "", s.SetUserEnabled(args[2], v != "0")
		}
		return "", nil
	case "user modify":
		if err := first(want(3), known("enable")); err != nil {
			return "", err
		}
		return "", s.SetUserEnabled(args[2], opts["enable"] != "0")
	case "user token add":
		if err := first(want(5), known("privsep", "comment", "expire")); err != nil {
			return "", err
		}
		return s.AddToken(args[3], args[4], opts["privsep"] != "0")
	case "user token remove", "user token delete":
		if err := first(want(5), known()); err != nil {
			return "", err
		}
		return "", s.DeleteToken(args[3], args[4])
	case "group add":
		if err := first(want(3), known("comment")); err != nil {
			return "", err
		}
		return "", s.AddGroup(args[2])
	case "role add":
		if err := first(want(3), known("privs")); err != nil {
			return "", err
		}
		return "", s.AddRole(args[2], opts["privs"])
	case "acl modify", "acl delete":
		if err := first(want(3), known("roles", "users", "groups", "tokens", "propagate")); err != nil {
			return "", err
		}
		if opts["roles"] == "" {
			return "", fmt.Errorf("pveum %s: --roles is required", cmd)
		}
		a := ACL{Path: args[2], Roles: splitPrivs([]string{opts["roles"]}), Users: splitPrivs([]string{opts["users"]}),
			Groups: splitPrivs([]string{opts["groups"]}), Tokens: splitPrivs([]string{opts["tokens"]}), NoPropagate: opts["propagate"] == "0"}
		if cmd == "acl delete" {
			return "", s.DeleteACL(a)
		}
		return "", s.SetACL(a)
	}
	return "", fmt.Errorf("pveum: the lab does not know the command %q", line)
}

// PveumScript runs the pveum lines of a script (a recipe as documented:
// lines starting with "pveum", "#" comments and other lines ignored) and
// returns the tokens it minted, by full token id.
func (s *Server) PveumScript(script string) (map[string]string, error) {
	tokens := map[string]string{}
	for _, l := range strings.Split(script, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if l = strings.TrimSpace(l); !strings.HasPrefix(l, "pveum ") {
			continue
		}
		out, err := s.Pveum(l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l, err)
		}
		if id, _, ok := strings.Cut(out, "="); ok {
			tokens[id] = out
		}
	}
	return tokens, nil
}

func first(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// pveumArgs separates positional arguments from --options.
func pveumArgs(words []string) ([]string, map[string]string, error) {
	var args []string
	opts := map[string]string{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			args = append(args, w)
			continue
		}
		name := strings.TrimLeft(w, "-")
		if k, v, ok := strings.Cut(name, "="); ok {
			opts[k] = v
			continue
		}
		if i+1 >= len(words) {
			return nil, nil, fmt.Errorf("option %s needs a value", w)
		}
		opts[name] = words[i+1]
		i++
	}
	return args, opts, nil
}

// shellWords splits a command line like a POSIX shell: blanks separate
// words, single quotes keep everything, double quotes and backslashes the
// usual way.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
