package talos

import (
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// A new cluster CA (the cluster was rebuilt with new machine secrets) makes
// the stored kubeconfig useless: the preview says so and the update fetches
// a new one, although the certificate is far from expiry.
func TestKubeconfigRefetchedWhenTheClusterCAChanges(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	ip := simtest.AddressBlock()
	s := nodeServer(t, time.Now)

	// Two clusters of one control plane each, with different CAs.
	otherSecrets, err := talosconfig.NewSecrets(simtest.Version, applyTestNow)
	if err != nil {
		t.Fatal(err)
	}

	boot := func(name string, c *simCluster) {
		addr := c.endpoint.String()
		apply := newRes(t, s, "ConfigurationApply", name)
		if err := apply.create(applyInputs(c, addr, c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version), nil)); err != nil {
			t.Fatal(err)
		}

		b := newRes(t, s, "Bootstrap", name+"-bootstrap")
		if err := b.create(map[string]property.Value{"node": property.New(addr), "clientConfiguration": c.clientValue()}); err != nil {
			t.Fatal(err)
		}
	}

	simtest.Boot(sim, "cp1", ip(2), "scsi0")
	simtest.Boot(sim, "cp2", ip(3), "scsi0")

	first, second := newSimCluster(t, ip(2)), newSimClusterWith(t, ip(3), otherSecrets)
	boot("cp1", first)
	boot("cp2", second)

	kc := newRes(t, s, "Kubeconfig", "kubeconfig")
	if err := kc.create(map[string]property.Value{"node": property.New(ip(2).String()), "clientConfiguration": first.clientValue()}); err != nil {
		t.Fatal(err)
	}

	before, err := talosapi.ParseKubeconfig([]byte(kc.out("kubeconfig")))
	if err != nil {
		t.Fatal(err)
	}

	checked, d := kc.diff(map[string]property.Value{"node": property.New(ip(3).String()), "clientConfiguration": second.clientValue()})
	if _, ok := d.DetailedDiff["kubeconfig"]; !ok {
		t.Fatalf("a new cluster CA is not shown as a kubeconfig change: %+v", d.DetailedDiff)
	}

	if err := kc.update(checked); err != nil {
		t.Fatal(err)
	}

	after, err := talosapi.ParseKubeconfig([]byte(kc.out("kubeconfig")))
	if err != nil {
		t.Fatal(err)
	}

	if string(after.CA) == string(before.CA) {
		t.Fatal("the kubeconfig still carries the old cluster's Kubernetes CA")
	}

	// The same CA with a renewed admin certificate is no kubeconfig change.
	if _, d := kc.diff(map[string]property.Value{"node": property.New(ip(3).String()), "clientConfiguration": newSimClusterWith(t, ip(3), otherSecrets).clientValue()}); d.DetailedDiff["kubeconfig"] != (p.PropertyDiff{}) {
		t.Fatalf("diff = %+v", d.DetailedDiff)
	}
}
