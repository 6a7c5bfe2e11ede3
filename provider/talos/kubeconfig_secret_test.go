package talos

import (
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// The kubeconfig output is secret in what the provider returns from create,
// update and refresh: the engine stores it as returned unless the program's
// SDK adds the schema's secret outputs (YAML does, the Go SDK does not).
func TestKubeconfigOutputIsSecret(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	cp := simtest.AddressBlock()(2)
	simtest.Boot(sim, "cp1", cp, "scsi0")

	c := newSimCluster(t, cp)
	s := nodeServer(t, time.Now)

	apply := newRes(t, s, "ConfigurationApply", "cp1")
	if err := apply.create(applyInputs(c, cp.String(), c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version), nil)); err != nil {
		t.Fatal(err)
	}

	boot := newRes(t, s, "Bootstrap", "bootstrap")
	if err := boot.create(map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue()}); err != nil {
		t.Fatal(err)
	}

	kc := newRes(t, s, "Kubeconfig", "kubeconfig")
	in := map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue()}

	if err := kc.create(in); err != nil {
		t.Fatal(err)
	}

	if !kc.state.Get("kubeconfig").Secret() {
		t.Fatal("create returns the kubeconfig in plain text")
	}

	// An endpoint change rewrites the kubeconfig in the update.
	in["kubernetesEndpoint"] = property.New("https://" + cp.String() + ":6443")

	checked, _ := kc.diff(in)
	if err := kc.update(checked); err != nil {
		t.Fatal(err)
	}

	if !kc.state.Get("kubeconfig").Secret() {
		t.Fatal("update returns the kubeconfig in plain text")
	}

	rd, err := kc.read()
	if err != nil {
		t.Fatal(err)
	}

	if !rd.Properties.Get("kubeconfig").Secret() {
		t.Fatal("read returns the kubeconfig in plain text")
	}
}
