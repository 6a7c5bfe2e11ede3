package talos

import (
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

func generateRequest(typ mtype.Type, endpoint string) *machine.GenerateConfigurationRequest {
	return &machine.GenerateConfigurationRequest{
		ConfigVersion: "v1alpha1",
		ClusterConfig: &machine.ClusterConfig{Name: "gen", ControlPlane: &machine.ControlPlaneConfig{Endpoint: "https://" + endpoint + ":6443"}},
		MachineConfig: &machine.MachineConfig{
			Type:              machine.MachineConfig_MachineType(typ),
			KubernetesVersion: "1.34.1",
			InstallConfig:     &machine.InstallConfig{InstallDisk: "/dev/sda", InstallImage: installer111},
		},
	}
}

// Maintenance mode generates control plane configs at the node's version
// contract (v1.11.5: its own), refuses join configs, and what it generates
// is a config the node takes.
func TestMaintenanceGenerateConfiguration(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	ip := addressBlock()
	v := newVM("cp1", ip(11), "scsi0")
	v.m.CDROM = isoURL111
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	c := maintenanceClient(t, v.addr())
	ctx := ctxT(t)

	_, err := c.MachineClient.GenerateConfiguration(ctx, generateRequest(mtype.TypeWorker, v.addr().String()))
	mustContain(t, err, "join config can't be generated in the maintenance mode")

	_, err = c.MachineClient.GenerateConfiguration(ctx, &machine.GenerateConfigurationRequest{ConfigVersion: "v1alpha1"})
	mustContain(t, err, "invalid generate request")

	bad := generateRequest(mtype.TypeControlPlane, v.addr().String())
	bad.ConfigVersion = "v1alpha2"
	_, err = c.MachineClient.GenerateConfiguration(ctx, bad)
	mustContain(t, err, "unsupported config version v1alpha2")

	resp, err := c.MachineClient.GenerateConfiguration(ctx, generateRequest(mtype.TypeControlPlane, v.addr().String()))
	if err != nil {
		t.Fatal(err)
	}

	msg := resp.Messages[0]

	cfg, err := loadConfig(msg.Data[0])
	if err != nil {
		t.Fatal(err)
	}

	if cfg.Machine().Type() != mtype.TypeControlPlane || cfg.Cluster().Name() != "gen" || cfg.Machine().Install().Disk() != "/dev/sda" {
		t.Fatalf("generated config: type %s, cluster %q, disk %q", cfg.Machine().Type(), cfg.Cluster().Name(), cfg.Machine().Install().Disk())
	}

	if strings.Contains(string(msg.Data[0]), "grubUseUKICmdline") || len(cfg.Documents()) != 1 {
		t.Fatalf("a v1.11 node generates at the 1.11 contract (one v1alpha1 document, no 1.12 keys):\n%s", msg.Data[0])
	}

	tcfg, err := clientconfig.FromBytes(msg.Talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	if eps := tcfg.Contexts[tcfg.Context].Endpoints; len(eps) != 1 || eps[0] != v.addr().String() {
		t.Fatalf("talosconfig endpoints = %v", eps)
	}

	if n.Status().Configured {
		t.Fatal("generating must not configure the node")
	}

	if _, err := c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: msg.Data[0], Mode: machine.ApplyConfigurationRequest_AUTO}); err != nil {
		t.Fatalf("the node refuses the config it generated: %v", err)
	}

	waitFor(t, "configured", func() bool { st := n.Status(); return st.Phase == PhaseRunning && st.Configured })

	// Configured: generated with the active config's secrets (the admin
	// talosconfig from the generated one works), workers refuse.
	sc := secureClient(t, tcfg, v.addr())
	waitFor(t, "apid", func() bool { _, err := sc.Version(ctx); return err == nil })

	again, err := sc.MachineClient.GenerateConfiguration(ctx, generateRequest(mtype.TypeWorker, v.addr().String()))
	if err != nil {
		t.Fatal(err)
	}

	w, err := loadConfig(again.Messages[0].Data[0])
	if err != nil {
		t.Fatal(err)
	}

	if w.Machine().Type() != mtype.TypeWorker || !strings.Contains(string(again.Messages[0].Data[0]), cfg.Machine().Security().Token()) {
		t.Fatal("a configured control plane generates a worker config with its own secrets (machine token)")
	}
}

// A v1.12 node generates with the 1.11 contract, as v1.12.5 does.
func TestGenerateConfigurationContract(t *testing.T) {
	t.Parallel()

	resp, err := generateConfiguration(generateRequest(mtype.TypeControlPlane, "10.5.0.2"), "v1.12.5", nil)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := loadConfig(resp.Messages[0].Data[0])
	if err != nil {
		t.Fatal(err)
	}

	if strings.Contains(string(resp.Messages[0].Data[0]), "grubUseUKICmdline") || len(cfg.Documents()) != 1 {
		t.Fatalf("v1.12.5 generates at the 1.11 contract:\n%s", resp.Messages[0].Data[0])
	}
}
