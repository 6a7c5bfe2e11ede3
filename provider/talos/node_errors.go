package talos

import "strings"

// nodeWho is how an error about a node that failed with err names it, so
// that the node is named once: talosapi's errors name the node they are
// about, so a wrapper that named it too said it twice ("control plane
// components of node X: ... node X runs does not parse"). It is "the node"
// when err names node, else "node <label>" (labelNode: its hostname and
// address). Callers put it in their own fmt.Errorf, so that go vet checks
// the format and user input stays an argument.
func nodeWho(node, label string, err error) string {
	if namesNode(err.Error(), node) {
		return "the node"
	}

	return "node " + label
}

// namesNode reports whether msg says "node <node>" with nothing after the
// address that continues it: "node 10.0.0.1" is not in "node 10.0.0.12",
// "node fd00::1" not in "node fd00::1:5", "node cp-1" not in "node cp-10".
// A port names the node too (talosapi's waits say "node 10.0.0.1:50000");
// after an IPv6 address a ':' ends it only before a space or the end.
func namesNode(msg, node string) bool {
	want := "node " + node

	for i := strings.Index(msg, want); i >= 0; {
		rest := msg[i+len(want):]
		if rest == "" || endsAddress(rest, strings.Contains(node, ":")) {
			return true
		}

		next := strings.Index(rest, want)
		if next < 0 {
			return false
		}

		i += len(want) + next
	}

	return false
}

// endsAddress reports whether rest, the text after an address (ipv6: one
// with colons), starts with a byte that cannot continue it.
func endsAddress(rest string, ipv6 bool) bool {
	c := rest[0]

	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '.', c == '-', c == '_', c == ']':
		return false
	case c == ':' && ipv6:
		return len(rest) == 1 || rest[1] == ' '
	}

	return true
}
