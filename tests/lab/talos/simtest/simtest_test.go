package simtest

import (
	"net/netip"
	"testing"
)

// Tests in one process must never share a block, and every address must be
// loopback (tests listen on loopback only).
func TestAddressBlocksAreDistinctLoopbackBlocks(t *testing.T) {
	t.Parallel()

	seen := map[netip.Prefix]bool{}

	for range 600 {
		a := AddressBlock()(2)
		if !a.IsLoopback() {
			t.Fatalf("address %s is not loopback", a)
		}

		p := netip.PrefixFrom(a, 24).Masked()
		if seen[p] {
			t.Fatalf("block %s handed out twice", p)
		}

		seen[p] = true
	}
}
