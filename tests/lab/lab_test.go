package lab

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

func TestStartAndAccessors(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !strings.HasPrefix(l.Endpoint(), "https://127.0.0.1:") {
		t.Fatalf("endpoint %q", l.Endpoint())
	}
	if id, secret, ok := strings.Cut(l.APIToken(), "="); !ok || id != "root@pam!lab" || len(secret) != 36 {
		t.Fatalf("token %q", l.APIToken())
	}
	if !strings.Contains(string(l.CACertPEM()), "BEGIN CERTIFICATE") {
		t.Fatal("no CA PEM")
	}
	if strings.Join(l.Nodes(), ",") != "pve1,pve2,pve3" || strings.Join(l.Storages("pve2"), ",") != "local,local-lvm" {
		t.Fatalf("nodes %v storages %v", l.Nodes(), l.Storages("pve2"))
	}
	b := l.AddressBlock()
	if b.Bits() != 24 || b.Addr().As4()[0] != 127 || b.Addr().As4()[1] == 0 || b.Addr().As4()[3] != 0 {
		t.Fatalf("address block %v", b)
	}
	if len(l.VMs()) != 0 {
		t.Fatal("new lab has VMs")
	}
	if err := l.SetVMConfig(100, "cores", "2"); err == nil {
		t.Fatal("SetVMConfig on a missing VM")
	}
	if err := l.DeleteVM(100); err == nil {
		t.Fatal("DeleteVM on a missing VM")
	}
	l.SetFaults(pve.Faults{TaskFailureRate: 0.5})
	if l.PVE.Faults().TaskFailureRate != 0.5 {
		t.Fatal("faults not set")
	}
}

// TestAddressBlocksDistinct: labs started together never share a block,
// even with the same seed; a closed lab's block can be taken again.
func TestAddressBlocksDistinct(t *testing.T) {
	t.Parallel()
	const n = 8
	labs := make([]*Lab, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l, err := Start(context.Background(), Options{Seed: 99})
			if err != nil {
				errs <- err
				return
			}
			labs[i] = l
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range labs {
		if seen[l.AddressBlock().String()] {
			t.Fatalf("block %s given twice", l.AddressBlock())
		}
		seen[l.AddressBlock().String()] = true
	}
	first := labs[0].AddressBlock()
	for _, l := range labs {
		l.Close()
	}
	again, err := Start(context.Background(), Options{Seed: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !seen[again.AddressBlock().String()] {
		t.Fatalf("seeded lab took %s, expected one of the freed blocks (first %s)", again.AddressBlock(), first)
	}
}
