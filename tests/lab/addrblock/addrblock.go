// Package addrblock hands out 127.X.Y.0/24 loopback address blocks that no
// other test process holds at the same time. Labs and simulator-only tests
// both bind simulated Talos nodes to fixed ports on these addresses, so they
// must share one claim mechanism.
package addrblock

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Claim picks a free 127.X.Y.0/24 (X 1..254): candidates come from the seed
// (random when 0); a block is taken by holding an flock on a file in the temp
// directory, which the kernel releases when the file is closed or the process
// dies. Close the returned file to give the block back.
func Claim(seed int64) (netip.Prefix, *os.File, error) {
	if seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = int64(binary.LittleEndian.Uint64(b[:]))
	}
	r := mrand.New(mrand.NewSource(seed))
	dir := filepath.Join(os.TempDir(), "proxmoxtalos-lab-blocks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return netip.Prefix{}, nil, fmt.Errorf("lab: create %s for address block locks: %w", dir, err)
	}
	for i := 0; i < 1000; i++ {
		x, y := 1+r.Intn(254), r.Intn(256)
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("127.%d.%d.0.lock", x, y)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return netip.Prefix{}, nil, fmt.Errorf("lab: address block lock: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		fmt.Fprintf(f, "%d %s\n", os.Getpid(), time.Now().Format(time.RFC3339))
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(x), byte(y), 0}), 24), f, nil
	}
	return netip.Prefix{}, nil, fmt.Errorf("lab: no free 127.X.Y.0/24 address block after 1000 tries (stale locks in %s?)", dir)
}

// Hold claims a block (random candidates) for the rest of the process, for
// tests that never give theirs back, and returns host -> 127.X.Y.host.
func Hold() (func(host int) netip.Addr, error) {
	block, lock, err := Claim(0)
	if err != nil {
		return nil, err
	}

	held.Lock()
	held.files = append(held.files, lock)
	held.Unlock()

	a := block.Addr().As4()

	return func(host int) netip.Addr { return netip.AddrFrom4([4]byte{a[0], a[1], a[2], byte(host)}) }, nil
}

// held keeps the held blocks' lock files referenced: an unreferenced
// *os.File is closed by its finalizer, which would release the block.
var held struct {
	sync.Mutex
	files []*os.File
}
