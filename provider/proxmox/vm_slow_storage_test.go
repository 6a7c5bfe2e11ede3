package proxmox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	provider "github.com/proxmoxtalos/proxmoxtalos/provider"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// A node that answers but whose storage reads are slow (on real PVE an
// unreachable NFS/CIFS/PBS storage: pve-storage's storage_info checks each
// storage's server with its own timeouts) is not a node that does not
// answer: Check passes a new VM on it and Diff shows an existing one
// unchanged, with no "not checked" powerState update for `up` to run. A
// proxy in front of the lab holds every storage read of pve2 until the
// provider probes the node (GET /nodes/pve2/version, sent once a planning
// read has waited half of pve.NodeWait), so each of those reads surely outlives
// that however fast the machine is; this test therefore takes about
// half of NodeWait (5 s) of real time.
func TestVirtualMachineCheckAndDiffWithSlowStorageOnANodeThatAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := property.NewMap(plainVM("pve2", "existing"))
	id, st := e.create(vmType, "existing", in)

	front, err := labpve.NewHoldProxy(e.lab.Endpoint(), e.lab.CACertPEM(), "/api2/json/nodes/pve2/version", func(path string) bool {
		return strings.HasPrefix(path, "/api2/json/nodes/pve2/storage")
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	prov, err := provider.New()
	if err != nil {
		t.Fatal(err)
	}
	s, err := integration.NewServer(ctx, provider.Name, semver.MustParse("1.0.0"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"endpoint": property.New(front.URL()),
		"apiToken": property.New(e.lab.APIToken()).WithSecret(true),
		"caCert":   property.New(front.CACertPEM()),
	})}); err != nil {
		t.Fatal(err)
	}
	run := &env{t: t, lab: e.lab, s: s} // an `up`'s provider, which has read nothing yet

	if f := run.checkFailures(vmType, "new", property.Map{}, property.NewMap(plainVM("pve2", "new"))); len(f) != 0 {
		t.Fatalf("new VM on a node with slow storage reads: %+v", f)
	}
	if f := run.checkFailures(vmType, "existing", in, in); len(f) != 0 {
		t.Fatalf("existing VM on a node with slow storage reads: %+v", f)
	}
	if d := run.diff(vmType, "existing", id, st, in, in); d.HasChanges {
		t.Fatalf("diff of a VM on a node with slow storage reads: %v, want no change (no powerState update)", diffKinds(d))
	}
	if front.Held.Load() == 0 || front.Releases.Load() == 0 {
		t.Fatalf("%d slow storage reads and %d probes of pve2, want at least 1 of each", front.Held.Load(), front.Releases.Load())
	}
}
