// Package closedport gives tests a loopback address where a TCP connection
// is refused, reliably.
//
// Listening on port 0 and closing the listener frees the port for anyone:
// under a parallel test run another server can take it before the test
// connects, and the test then talks to that server (CI saw a TLS error
// instead of "connection refused"). A socket that is bound but never
// listens keeps the port reserved (without SO_REUSEADDR no one else can
// bind it) while the kernel answers every SYN to it with a reset.
package closedport

import (
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"testing"
)

// Addr returns host:port on the IPv4 address ip where connections are
// refused until the test ends.
func Addr(t testing.TB, ip string) string {
	t.Helper()

	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		t.Fatalf("closedport: %q is not an IPv4 address", ip)
	}

	// CLOEXEC: a child process (talosctl, pulumi) must not keep the port
	// reserved after the test ends.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("closedport: socket: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })

	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: a.As4()}); err != nil {
		t.Fatalf("closedport: bind %s: %v", ip, err)
	}

	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("closedport: getsockname: %v", err)
	}

	return net.JoinHostPort(ip, strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
