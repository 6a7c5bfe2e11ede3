package closedport

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

func TestAddrRefusesAndStaysReserved(t *testing.T) {
	t.Parallel()

	addr := Addr(t, "127.0.0.1")

	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			t.Fatalf("a connection to %s was accepted", addr)
		}

		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %s: %v, want connection refused", addr, err)
		}
	}

	// What took the port before: a server listening on it.
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another listener could take %s", addr)
	}
}
