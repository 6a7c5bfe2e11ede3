package talos

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

func wantCode(t *testing.T, err error, code codes.Code, text string) {
	t.Helper()

	if status.Code(err) != code {
		t.Fatalf("got %v, want code %v", err, code)
	}

	mustContain(t, err, text)
}

func TestMaintenanceModeRefusesWhatNeedsAConfiguredNode(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	ip := addressBlock()
	v := newVM("cp1", ip(11), "scsi0")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	c := maintenanceClient(t, v.addr())
	ctx := ctxT(t)

	_, err := c.Version(ctx)
	wantCode(t, err, codes.Unimplemented, "API is not implemented in maintenance mode")

	_, err = c.MachineClient.Reset(ctx, &machine.ResetRequest{Graceful: true})
	wantCode(t, err, codes.Unimplemented, "API is not implemented in maintenance mode")

	_, err = c.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: installer})
	wantCode(t, err, codes.Unimplemented, "API is not implemented in maintenance mode")

	cfg := configBytes(t, clusterInput(t, v.addr()), mtype.TypeControlPlane)

	for mode, text := range map[machine.ApplyConfigurationRequest_Mode]string{
		machine.ApplyConfigurationRequest_NO_REBOOT: "apply configuration --mode='no-reboot' is not supported in maintenance mode",
		machine.ApplyConfigurationRequest_STAGED:    "apply configuration --mode='staged' is not supported in maintenance mode",
	} {
		_, err = c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: cfg, Mode: mode})
		wantCode(t, err, codes.Unimplemented, text)
	}

	// Disks are served from the VM's disks: a scsi disk is /dev/sda.
	disks, err := c.Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}

	d := disks.Messages[0].Disks
	if len(d) != 1 || d[0].DeviceName != "/dev/sda" || d[0].Size != 20<<30 || d[0].SystemDisk {
		t.Fatalf("Disks = %v", d)
	}

	if n.Status().Configured {
		t.Fatal("refused calls must not configure the node")
	}
}

func TestMaintenanceApplyValidatesWithMachinery(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	ip := addressBlock()
	v := newVM("cp1", ip(11), "scsi0")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	c := maintenanceClient(t, v.addr())
	ctx := ctxT(t)

	// A control plane config with its type removed: machinery refuses the CA keys.
	bad := configBytes(t, clusterInput(t, v.addr()), mtype.TypeControlPlane, func(s string) string {
		return strings.Replace(s, "type: controlplane", "type: \"\"", 1)
	})

	_, err := c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: bad, Mode: machine.ApplyConfigurationRequest_AUTO})
	wantCode(t, err, codes.InvalidArgument, "configuration validation failed: 1 error occurred")
	mustContain(t, err, "issuing Talos API CA key is not allowed on non-controlplane nodes (.machine.ca)")

	_, err = c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: []byte("version: v1alpha1\nmachine: [\n"), Mode: machine.ApplyConfigurationRequest_AUTO})
	mustContain(t, err, "failed to parse config")

	if n.Status().Phase != PhaseMaintenance {
		t.Fatalf("phase = %s after invalid configs, want maintenance", n.Status().Phase)
	}
}

func TestInstallAndBootConfigured(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	ip := addressBlock()
	v := newVM("cp1", ip(11), "scsi0")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	if _, ok := n.Agent(); !ok {
		t.Fatal("the guest agent must answer: the ISO's schematic has qemu-guest-agent")
	}

	in := clusterInput(t, v.addr())
	c := maintenanceClient(t, v.addr())
	ctx := ctxT(t)

	resp, err := c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: configBytes(t, in, mtype.TypeControlPlane), Mode: machine.ApplyConfigurationRequest_AUTO})
	if err != nil {
		t.Fatal(err)
	}

	if len(resp.Messages) != 1 {
		t.Fatalf("reply = %v", resp)
	}

	waitFor(t, "configured and running", func() bool { st := n.Status(); return st.Phase == PhaseRunning && st.Configured })

	if got := v.host.content("scsi0"); !strings.HasPrefix(got, contentPrefix) || !strings.Contains(got, "version="+testVersion) {
		t.Fatalf("disk content = %q, want a Talos installation", got)
	}

	sc := secureClient(t, adminTalosconfig(t, in), v.addr())

	waitFor(t, "apid answers", func() bool { _, err := sc.Version(ctx); return err == nil })

	ver, err := sc.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if got := ver.Messages[0].Version.Tag; got != testVersion {
		t.Fatalf("Version tag = %q, want %q", got, testVersion)
	}

	if p := ver.Messages[0].Platform; p.Name != "nocloud" || p.Mode != "cloud" {
		t.Fatalf("platform = %v", p)
	}

	// The maintenance (insecure) connection no longer works: apid wants a client certificate.
	_, err = maintenanceClient(t, v.addr()).Disks(ctx)
	if err == nil {
		t.Fatal("a client without a certificate must be refused by apid")
	}

	// Stop and start the VM: it boots the installed system, configured.
	n.PowerOff()

	n2 := v.start(s)
	waitFor(t, "configured after restart", func() bool { st := n2.Status(); return st.Phase == PhaseRunning && st.Configured })

	waitFor(t, "apid answers after restart", func() bool { _, err := sc.MachineClient.Hostname(ctx, &emptypb.Empty{}); return err == nil })
}

func TestInstallDiskMissingNeverConfigures(t *testing.T) {
	t.Parallel()

	s, logs := newSim(t)
	ip := addressBlock()
	v := newVM("cp1", ip(11), "scsi0")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	// A config for a virtio disk on a VM with a scsi disk.
	in := clusterInput(t, v.addr())
	cfg := configBytes(t, in, mtype.TypeControlPlane, func(s string) string {
		return strings.Replace(s, "disk: /dev/sda", "disk: /dev/vda", 1)
	})

	c := maintenanceClient(t, v.addr())
	if _, err := c.ApplyConfiguration(ctxT(t), &machine.ApplyConfigurationRequest{Data: cfg, Mode: machine.ApplyConfigurationRequest_AUTO}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "install failure in the log", func() bool {
		return strings.Contains(logs.String(), "lstat /dev/vda: no such file or directory")
	})
	waitPhase(t, n, PhaseMaintenance)

	if v.host.content("scsi0") != "" {
		t.Fatal("a failed install must not write the disk")
	}

	if n.Status().Configured {
		t.Fatal("node must not come up configured")
	}
}

func TestUnreachableAddressIsLogged(t *testing.T) {
	t.Parallel()

	s, logs := newSim(t)
	v := newVM("cp1", addressBlock()(11), "scsi0")
	v.m.CloudInit.Interfaces[0].Address = netipPrefix("192.168.1.50/24")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	if n.Status().Address.IsValid() {
		t.Fatal("a non-loopback address must leave the node unreachable")
	}

	if !strings.Contains(logs.String(), "outside 127.0.0.0/8") {
		t.Fatalf("log does not say why the node is unreachable:\n%s", logs.String())
	}
}

func TestAPIFaults(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	v := newVM("cp1", addressBlock()(11), "scsi0")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	c := maintenanceClient(t, v.addr())
	s.SetFaults(Faults{APIErrorRate: 1})

	_, err := c.Disks(ctxT(t))
	wantCode(t, err, codes.Unavailable, "lab fault")

	s.SetFaults(Faults{})

	if _, err := c.Disks(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}
