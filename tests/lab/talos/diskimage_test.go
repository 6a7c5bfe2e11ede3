package talos

import (
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// A VM whose disk was imported from a Talos disk image boots installed but
// unconfigured: maintenance mode. A configuration applied there needs no
// install and no reboot: the boot goes on, apid answers over mTLS with the
// configuration active, and the control plane can be bootstrapped.
func TestDiskImageNodeGoesOnConfiguredWithoutReboot(t *testing.T) {
	t.Parallel()

	s, logs := newSimWith(t, Options{})
	ip := addressBlock()

	v := newVM("cp1", ip(11), "scsi0")
	v.m.CDROM = ""
	v.m.Disks[0].SourceURL = "https://factory.talos.dev/image/" + qgaID + "/v1.12.5/nocloud-amd64.raw.xz"
	v.m.BootOrder = []string{"scsi0", "net0"}

	in := clusterInput(t, ip(11))
	cfg := configBytes(t, in, mtype.TypeControlPlane)

	v.start(s)
	waitPhase(t, v.node, PhaseMaintenance)

	ctx := ctxT(t)

	if _, err := maintenanceClient(t, v.addr()).ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: cfg, Mode: machine.ApplyConfigurationRequest_AUTO}); err != nil {
		t.Fatal(err)
	}

	c := secureClient(t, adminTalosconfig(t, in), v.addr())

	waitFor(t, "apid over mTLS", func() bool { _, err := c.Version(ctx); return err == nil })

	if st := v.node.Status(); !st.Configured || st.Phase != PhaseRunning {
		t.Fatalf("after the apply: %+v: want configured and running", st)
	}

	if n := strings.Count(logs.String(), "msg=booted"); n != 1 {
		t.Fatalf("booted %d times: the apply must not reboot an installed node\n%s", n, logs.String())
	}

	if err := c.Bootstrap(ctx, &machine.BootstrapRequest{}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "etcd member", func() bool { return v.node.Status().EtcdMember })
}
