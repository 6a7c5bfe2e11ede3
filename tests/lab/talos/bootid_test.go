package talos

import (
	"context"
	"io"
	"regexp"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// bootIDFormat is what the kernel writes to /proc/sys/kernel/random/boot_id:
// a random (version 4) UUID in lower case and a newline (drivers/char/
// random.c proc_do_uuid, "%pU").
var bootIDFormat = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$`)

func readBootID(ctx context.Context, t *testing.T, c *client.Client) (string, error) {
	t.Helper()

	r, err := c.Read(ctx, "/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	defer r.Close() //nolint:errcheck

	b, err := io.ReadAll(r)

	return string(b), err
}

// The boot ID is what talosctl's --wait and the provider tell a reboot by:
// one per boot, the same for every read within it, another after a reboot.
// Maintenance mode does not serve Read (its server implements a few calls
// only: internal/app/maintenance/server.go, v1.12.5).
func TestBootIDIsNewEachBoot(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	v := newVM("w1", addressBlock()(11), "scsi0")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	ctx := ctxT(t)

	_, err := readBootID(ctx, t, maintenanceClient(t, v.addr()))
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("Read in maintenance mode: %v; want Unimplemented", err)
	}

	in := clusterInput(t, v.addr())
	if _, err := maintenanceClient(t, v.addr()).ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
		Data: configBytes(t, in, mtype.TypeControlPlane), Mode: machine.ApplyConfigurationRequest_AUTO,
	}); err != nil {
		t.Fatal(err)
	}

	c := secureClient(t, adminTalosconfig(t, in), v.addr())

	var first string

	waitFor(t, "the configured node's boot ID", func() bool {
		first, err = readBootID(ctx, t, c)

		return err == nil
	})

	if !bootIDFormat.MatchString(first) {
		t.Fatalf("boot ID %q is not a UUID and a newline", first)
	}

	if again, err := readBootID(ctx, t, c); err != nil || again != first {
		t.Fatalf("second read in the same boot = %q, %v; want %q", again, err, first)
	}

	boots := n.Status().Boots

	if err := c.Reboot(ctx); err != nil {
		t.Fatal(err)
	}

	var second string

	waitFor(t, "the boot ID after the reboot", func() bool {
		second, err = readBootID(ctx, t, c)

		return err == nil && n.Status().Boots > boots
	})

	if second == first || !bootIDFormat.MatchString(second) {
		t.Fatalf("boot ID after a reboot = %q (before %q); want another UUID", second, first)
	}
}
