package talosapi

import (
	"strings"
	"testing"
)

func TestHostPort(t *testing.T) {
	t.Parallel()

	cases := []struct{ in, want, err string }{
		{"10.5.0.2", "10.5.0.2:50000", ""},
		{"10.5.0.2:50001", "10.5.0.2:50001", ""},
		{" node1.lan ", "node1.lan:50000", ""},
		{"fd00::2", "[fd00::2]:50000", ""},
		{"[fd00::2]:50000", "[fd00::2]:50000", ""},
		{"https://10.5.0.2:50000", "10.5.0.2:50000", ""},
		{"10.5.0.2:0", "", "port"},
		{"10.5.0.2:http", "", "port"},
		{":50000", "", "no host"},
		{"", "", "empty"},
		{"10.5.0.0/24", "", "not a host name"},
	}

	for _, c := range cases {
		got, err := hostPort(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("hostPort(%q) err = %v, want containing %q", c.in, err, c.err)
			}

			continue
		}

		if err != nil || got != c.want {
			t.Errorf("hostPort(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestTargetProxied(t *testing.T) {
	t.Parallel()

	cases := []struct {
		t    Target
		want bool
	}{
		{Target{Node: "10.0.0.2"}, false},
		{Target{Node: "10.0.0.2", Endpoints: []string{"10.0.0.2"}}, false},
		{Target{Node: "10.0.0.2", Endpoints: []string{"10.0.0.2:50000", "10.0.0.3"}}, false},
		{Target{Node: "10.0.0.5", Endpoints: []string{"10.0.0.2", "10.0.0.3"}}, true},
	}

	for _, c := range cases {
		if got := c.t.proxied(); got != c.want {
			t.Errorf("%+v proxied = %v, want %v", c.t, got, c.want)
		}
	}

	if h := (Target{Node: "10.0.0.5:50000"}).nodeHost(); h != "10.0.0.5" {
		t.Errorf("nodeHost = %q", h)
	}
}

func TestTargetValidate(t *testing.T) {
	t.Parallel()

	if err := (Target{}).Validate(); err == nil || !strings.Contains(err.Error(), "node address is empty") {
		t.Fatalf("empty node: %v", err)
	}

	if err := (Target{Node: "10.0.0.2", Endpoints: []string{"bad:port"}}).Validate(); err == nil {
		t.Fatal("bad endpoint accepted")
	}
}
