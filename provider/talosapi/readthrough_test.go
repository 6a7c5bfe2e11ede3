package talosapi_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// Through a control plane's connection, a configured worker answers what it
// answers directly (same text, same version); a node in maintenance mode and
// an address where nothing answers give an error, so that the caller asks
// them directly; the control plane itself is not read through itself.
func TestReadActiveConfigThroughAnotherNode(t *testing.T) {
	t.Parallel()

	s := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp, worker, maint, nobody := ip(2).String(), ip(10).String(), ip(11).String(), ip(12).String()

	simtest.Boot(s, "cp1", ip(2), "scsi0")
	simtest.Boot(s, "w1", ip(10), "virtio0")
	simtest.Boot(s, "m1", ip(11), "virtio0")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	o := simOptions(t)
	creds := adminCreds(t)

	// The worker runs a text of another form than the generator's (with
	// comments; as one applied with talosctl may be).
	workerConfig, err := configloader.NewFromBytes(nodeConfig(t, talosconfig.RoleWorker, ip(2), "/dev/vda", simtest.Version))
	if err != nil {
		t.Fatal(err)
	}

	commented, err := workerConfig.EncodeBytes(encoder.WithComments(encoder.CommentsAll))
	if err != nil {
		t.Fatal(err)
	}

	for node, cfg := range map[string][]byte{
		cp:     nodeConfig(t, talosconfig.RoleControlPlane, ip(2), "/dev/sda", simtest.Version),
		worker: commented,
	} {
		if _, err := talosapi.Apply(ctx, talosapi.Target{Node: node, Creds: creds}, talosapi.ApplyRequest{Config: cfg}, o); err != nil {
			t.Fatal(err)
		}
	}

	_, mode, _, via, err := talosapi.ReadActiveConfigKeep(ctx, talosapi.Target{Node: cp, Creds: creds, Configured: true}, o)
	if err != nil || mode != talosapi.ModeSecure || via == nil {
		t.Fatalf("control plane: mode %q, connection kept %v, %v", mode, via != nil, err)
	}
	defer via.Close() //nolint:errcheck

	direct, _, version, err := talosapi.ReadActiveConfig(ctx, talosapi.Target{Node: worker, Creds: creds, Configured: true}, o)
	if err != nil {
		t.Fatal(err)
	}

	through, throughVersion, err := talosapi.ReadActiveConfigThrough(ctx, via, worker, o)
	if err != nil {
		t.Fatalf("worker through the control plane: %v", err)
	}

	if !bytes.Equal(through.Active, direct.Active) || throughVersion != version || version == "" {
		t.Errorf("worker through the control plane: same text %v, version %q, directly %q",
			bytes.Equal(through.Active, direct.Active), throughVersion, version)
	}

	// The read parses as the typed COSI resource did (configload.go).
	for node, through := range map[string]string{cp: "", worker: worker} {
		if err := talosapi.SameActiveReadings(ctx, via, through); err != nil {
			t.Errorf("node %s: %v", node, err)
		}
	}

	quick := o
	quick.AttemptTimeout = 2 * time.Second

	for _, node := range []string{maint, nobody, cp} {
		if nc, _, err := talosapi.ReadActiveConfigThrough(ctx, via, node, quick); err == nil {
			t.Errorf("node %s through the control plane: answered %d bytes, want an error", node, len(nc.Active))
		}
	}
}
