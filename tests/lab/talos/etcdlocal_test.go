package talos

import (
	"bufio"
	"context"
	"io"
	"net"
	"slices"
	"testing"
)

// fakeMember answers each line on a connection with its name: which member
// a connection through etcdLocal reached.
func fakeMember(t *testing.T, name string) (addr string, stop func()) {
	t.Helper()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}

			go func() {
				defer c.Close() //nolint:errcheck

				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}

					if _, err := io.WriteString(c, name+"\n"); err != nil {
						return
					}
				}
			}()
		}
	}()

	stop = func() { _ = l.Close() }
	t.Cleanup(stop)

	return l.Addr().String(), stop
}

// ask sends a line and returns the answer ("" when the connection ended).
func ask(c net.Conn, r *bufio.Reader) string {
	if _, err := io.WriteString(c, "who\n"); err != nil {
		return ""
	}

	s, err := r.ReadString('\n')
	if err != nil {
		return ""
	}

	return s[:len(s)-1]
}

// TestEtcdLocalFollowsTheMembers: a connection reaches the first member
// that accepts (one whose process is gone is skipped); when its member
// leaves the set, the connection ends, and the next one reaches a member
// still in it; with no member a connection ends at once. The apiserver
// behind it never restarts for a member joining or leaving.
func TestEtcdLocalFollowsTheMembers(t *testing.T) {
	t.Parallel()

	a, _ := fakeMember(t, "a")
	b, _ := fakeMember(t, "b")
	gone, stopGone := fakeMember(t, "gone")
	stopGone()

	e, err := newEtcdLocal()
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()

	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", e.l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}

		t.Cleanup(func() { _ = c.Close() })

		return c, bufio.NewReader(c)
	}

	e.setMembers([]string{gone, a, b}, nil)

	c1, r1 := dial()
	if got := ask(c1, r1); got != "a" {
		t.Fatalf("first connection reached %q, want a (gone does not accept)", got)
	}

	e.setMembers([]string{b}, nil)

	if got := ask(c1, r1); got != "" {
		t.Fatalf("a connection to a member that left still answers: %q", got)
	}

	c2, r2 := dial()
	if got := ask(c2, r2); got != "b" {
		t.Fatalf("after a left, a connection reached %q, want b", got)
	}

	e.setMembers([]string{b, a}, nil) // a joins again: b's connection stays

	if got := ask(c2, r2); got != "b" {
		t.Fatalf("a member joining ended another's connection: %q", got)
	}

	e.setMembers(nil, nil)

	c3, r3 := dial()
	if got := ask(c3, r3); got != "" {
		t.Fatalf("with no member a connection reached %q", got)
	}
}

// A running member that lost its leader is passed over while another knows
// one (on a real cluster only its own node's apiserver fails); when none
// does, the first that accepts is taken, as before.
func TestEtcdLocalPrefersAMemberWithALeader(t *testing.T) {
	t.Parallel()

	a, _ := fakeMember(t, "a")
	b, _ := fakeMember(t, "b")

	e, err := newEtcdLocal()
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()

	reached := func() string {
		c, err := net.Dial("tcp", e.l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() //nolint:errcheck

		return ask(c, bufio.NewReader(c))
	}

	leaders := func(with ...string) func(context.Context, string) bool {
		return func(_ context.Context, m string) bool { return slices.Contains(with, m) }
	}

	e.setMembers([]string{a, b}, leaders(b))

	if got := reached(); got != "b" {
		t.Fatalf("a connection reached %q, want b (a has no leader)", got)
	}

	e.setMembers([]string{a, b}, leaders())

	if got := reached(); got != "a" {
		t.Fatalf("with no leader anywhere a connection reached %q, want a (the first)", got)
	}
}
