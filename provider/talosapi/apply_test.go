package talosapi

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestParseApplyMode(t *testing.T) {
	t.Parallel()

	for in, want := range map[string]ApplyMode{"": ApplyAuto, "AUTO": ApplyAuto, "no-reboot": ApplyNoReboot, " Reboot ": ApplyReboot, "staged": ApplyStaged, "try": ApplyTry} {
		got, err := ParseApplyMode(in)
		if err != nil || got != want {
			t.Errorf("ParseApplyMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}

	if _, err := ParseApplyMode("no_reboot"); err == nil || !strings.Contains(err.Error(), "auto, no-reboot, reboot, staged, try") {
		t.Errorf("no_reboot: %v", err)
	}
}

func TestApplyModeProtoRoundTrip(t *testing.T) {
	t.Parallel()

	for _, m := range ApplyModes {
		if got := modeFromProto(m.proto()); got != m {
			t.Errorf("%s -> %s -> %s", m, m.proto(), got)
		}
	}

	if ApplyNoReboot.proto() != machineapi.ApplyConfigurationRequest_NO_REBOOT || ApplyStaged.proto() != machineapi.ApplyConfigurationRequest_STAGED {
		t.Error("wrong proto mapping")
	}
}

func TestMaintenanceModeOnlySendsWhatMaintenanceAccepts(t *testing.T) {
	t.Parallel()

	// internal/app/maintenance/server.go accepts TRY, REBOOT and AUTO only.
	accepted := map[machineapi.ApplyConfigurationRequest_Mode]bool{
		machineapi.ApplyConfigurationRequest_AUTO: true, machineapi.ApplyConfigurationRequest_REBOOT: true, machineapi.ApplyConfigurationRequest_TRY: true,
	}

	for _, m := range ApplyModes {
		if !accepted[m.maintenanceMode().proto()] {
			t.Errorf("mode %s would send %s to a maintenance-mode node", m, m.maintenanceMode().proto())
		}
	}

	if ApplyReboot.maintenanceMode() != ApplyReboot || ApplyStaged.maintenanceMode() != ApplyAuto {
		t.Error("reboot must stay reboot, staged must become auto")
	}
}

func TestConfigDigestIgnoresCommentsButNotValues(t *testing.T) {
	t.Parallel()

	cfg := testMachineConfig(t, "/dev/sda")

	d1, err := ConfigDigest(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// Strip every comment line: same contents, same digest.
	var stripped bytes.Buffer

	for _, line := range strings.SplitAfter(string(cfg), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}

		stripped.WriteString(line)
	}

	if stripped.Len() == len(cfg) {
		t.Fatal("test config has no comments to strip")
	}

	d2, err := ConfigDigest(stripped.Bytes())
	if err != nil || d2 != d1 {
		t.Fatalf("digest changed when only comments were removed: %s vs %s (%v)", d1, d2, err)
	}

	changed := bytes.Replace(cfg, []byte("disk: /dev/sda"), []byte("disk: /dev/vda"), 1)
	if bytes.Equal(changed, cfg) {
		t.Fatal("install disk not found in test config")
	}

	d3, err := ConfigDigest(changed)
	if err != nil || d3 == d1 {
		t.Fatalf("digest did not change with the install disk: %v", err)
	}
}

func TestConfigDigestErrorWithholdsContent(t *testing.T) {
	t.Parallel()

	_, err := ConfigDigest([]byte("version: v1alpha1\nmachine:\n  token: SUPERSECRET\n  type: [oops\n"))
	if err == nil {
		t.Fatal("broken YAML accepted")
	}

	if strings.Contains(err.Error(), "SUPERSECRET") || strings.Contains(err.Error(), "oops") {
		t.Fatalf("error leaks config content: %v", err)
	}
}

func TestInstallDiskMissing(t *testing.T) {
	t.Parallel()

	for _, c := range []struct {
		disk  string
		disks []string
		want  string
	}{
		{"/dev/sda", []string{"/dev/vda"}, "/dev/sda"},
		{"/dev/vda", []string{"/dev/vda", "/dev/vdb"}, ""},
		{"/dev/sda", nil, ""}, // node reported nothing: let Talos decide
		{"/dev/disk/by-id/virtio-os", []string{"/dev/vda"}, ""},
	} {
		cfg, err := loadConfig(testMachineConfig(t, c.disk))
		if err != nil {
			t.Fatal(err)
		}

		if got := installDiskMissing(cfg, c.disks); got != c.want {
			t.Errorf("install disk %s on %v: missing = %q, want %q", c.disk, c.disks, got, c.want)
		}
	}
}

func TestApplyInMaintenanceModeSendsAutoForStaged(t *testing.T) {
	t.Parallel()

	addr, rec := serveMaintenanceRecorder(t, nil)

	res, err := Apply(context.Background(), Target{Node: addr}, ApplyRequest{Config: testMachineConfig(t, "/dev/sda"), Mode: ApplyStaged, NoWait: true}, fastOptions())
	if err != nil {
		t.Fatal(err)
	}

	if res.Via != ModeMaintenance || res.Applied != ApplyReboot {
		t.Fatalf("result %+v, want via maintenance, applied reboot (install)", res)
	}

	if got := rec.sent(); len(got) != 1 || got[0] != machineapi.ApplyConfigurationRequest_AUTO {
		t.Fatalf("modes sent = %v, want [AUTO]", got)
	}
}

func TestApplyInMaintenanceModeRefusesMissingInstallDisk(t *testing.T) {
	t.Parallel()

	addr, rec := serveMaintenanceRecorder(t, nil) // serves only /dev/sda

	_, err := Apply(context.Background(), Target{Node: addr}, ApplyRequest{Config: testMachineConfig(t, "/dev/vda")}, fastOptions())
	if err == nil || !strings.Contains(err.Error(), "no disk /dev/vda") || !strings.Contains(err.Error(), "/dev/sda") {
		t.Fatalf("err = %v, want a message naming the missing and the present disks", err)
	}

	if len(rec.sent()) != 0 {
		t.Fatal("configuration was sent although the install disk is missing")
	}
}

func TestApplyStopsOnInvalidArgument(t *testing.T) {
	t.Parallel()

	addr, rec := serveMaintenanceRecorder(t, status.Error(codes.InvalidArgument, "configuration validation failed: 1 error occurred:\n\t* install disk or disk selector should be defined"))

	_, err := Apply(context.Background(), Target{Node: addr}, ApplyRequest{Config: testMachineConfig(t, "/dev/sda")}, fastOptions())
	if err == nil || !strings.Contains(err.Error(), "refused the machine configuration") || !strings.Contains(err.Error(), "install disk or disk selector") {
		t.Fatalf("err = %v", err)
	}

	if n := len(rec.sent()); n != 1 {
		t.Fatalf("sent %d times, want exactly once (InvalidArgument is not retried)", n)
	}
}
