package proxmox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// A pool that exists passes preview, and the VM lands in it; a missing pool
// fails at `pool`, listing the pools there are.
func TestVirtualMachinePoolCheckedAtPreview(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.adminClient().NewPool(ctx, "k8s", ""); err != nil {
		t.Fatal(err)
	}
	in := plainVM("pve1", "pooled")
	in["pool"] = str("k8s8")
	f := e.checkFailures(vmType, "pooled", property.Map{}, property.NewMap(in))
	if len(f) != 1 || f[0].Property != "pool" || !strings.Contains(f[0].Reason, "the pools it can use are: k8s.") {
		t.Fatalf("missing pool: %+v", f)
	}
	in["pool"] = str("k8s")
	e.create(vmType, "pooled", property.NewMap(in))
	if vms := e.lab.VMs(); len(vms) != 1 || vms[0].Pool != "k8s" {
		t.Fatalf("lab VMs: %+v", vms)
	}
}
