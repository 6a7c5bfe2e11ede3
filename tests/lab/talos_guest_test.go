package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

const (
	qgaSchematic = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	talosISO     = "https://factory.talos.dev/image/" + qgaSchematic + "/v1.12.5/nocloud-amd64.iso"
	talosInstall = "factory.talos.dev/nocloud-installer/" + qgaSchematic + ":v1.12.5"
)

func pveClient(t *testing.T, l *Lab) *proxmox.Client {
	t.Helper()

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(l.CACertPEM()) {
		t.Fatal("lab CA does not parse")
	}

	id, secret, _ := strings.Cut(l.APIToken(), "=")

	return proxmox.NewClient(l.Endpoint()+"/api2/json", proxmox.WithAPIToken(id, secret), proxmox.WithRootCAs(pool),
		proxmox.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
}

func waitTask(t *testing.T, ctx context.Context, task *proxmox.Task, err error) {
	t.Helper()

	if err != nil {
		t.Fatal(err)
	}

	if err := task.Wait(ctx, 5*time.Millisecond, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	if task.ExitStatus != "OK" {
		t.Fatalf("task %s: %s", task.UPID, task.ExitStatus)
	}
}

// eventually waits until cond holds; its bound is a guard against hanging,
// not a speed check.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()

	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after a minute (a hang guard)", what)
		}

		time.Sleep(20 * time.Millisecond)
	}
}

// A Talos VM made through the Proxmox API boots the simulated node: ISO
// downloaded by URL, cloud-init address, install to its scsi disk, the
// guest agent, persistence across stop/start, and Talos powering itself off.
func TestTalosGuestThroughProxmox(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	l, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { l.Close() }) //nolint:errcheck

	node, vm, addr := startTalosVM(t, ctx, l)

	// The nocloud ISO's schematic has qemu-guest-agent: Proxmox sees the agent.
	if err := vm.WaitForAgent(ctx, 10); err != nil {
		t.Fatalf("guest agent: %v", err)
	}

	info, err := vm.AgentOsInfo(ctx)
	if err != nil || info.ID != "talos" || info.Version != "v1.12.5" {
		t.Fatalf("agent os info = %+v, %v", info, err)
	}

	// Configure it like the provider: maintenance mode, then mTLS.
	secure := installControlPlane(t, ctx, addr)

	// Stop and start through Proxmox: the disk keeps the installation.
	task, err := vm.Stop(ctx)
	waitTask(t, ctx, task, err)

	task, err = vm.Start(ctx)
	waitTask(t, ctx, task, err)

	eventually(t, "configured after restart", func() bool { _, err := secure.Version(ctx); return err == nil })

	var n *talos.Node
	eventually(t, "simulated node", func() bool { n = l.Talos().Node(addr); return n != nil })

	if st := n.Status(); !st.Configured || st.Image.Version != "v1.12.5" {
		t.Fatalf("node status = %+v", st)
	}

	// Talos shuts itself down: qemu exits, Proxmox shows the VM stopped.
	if _, err := secure.MachineClient.Shutdown(ctx, &machine.ShutdownRequest{}); err != nil {
		t.Fatal(err)
	}

	eventually(t, "VM stopped in Proxmox", func() bool {
		v, err := node.VirtualMachine(ctx, 100)

		return err == nil && v.IsStopped()
	})
}

// installControlPlane configures a lab VM's Talos node as a control plane,
// as the provider does (maintenance mode, then mTLS), waits until it
// answers configured and returns its mTLS client.
// startTalosVM downloads the lab's Talos ISO to pve1 and creates and starts
// VM 100 (cp1) booting it, with a static address, plus the given options.
func startTalosVM(t *testing.T, ctx context.Context, l *Lab, extra ...proxmox.VirtualMachineOption) (*proxmox.Node, *proxmox.VirtualMachine, netip.Addr) {
	t.Helper()
	c := pveClient(t, l)
	node, err := c.Node(ctx, "pve1")
	if err != nil {
		t.Fatal(err)
	}

	upid, err := node.StorageDownloadURL(ctx, &proxmox.StorageDownloadURLOptions{
		Node: "pve1", Storage: "local", Content: "iso", Filename: "talos-nocloud.iso", URL: talosISO,
	})
	if err != nil {
		t.Fatal(err)
	}

	waitTask(t, ctx, proxmox.NewTask(proxmox.UPID(upid), c), nil)

	addr := l.Address(10)
	opts := append([]proxmox.VirtualMachineOption{
		{Name: "name", Value: "cp1"},
		{Name: "memory", Value: 2048},
		{Name: "cores", Value: 2},
		{Name: "scsi0", Value: "local-lvm:10"},
		{Name: "ide2", Value: "local:iso/talos-nocloud.iso,media=cdrom"},
		{Name: "ide0", Value: "local-lvm:cloudinit"},
		{Name: "boot", Value: "order=scsi0;ide2;net0"},
		{Name: "net0", Value: "virtio,bridge=vmbr0"},
		{Name: "ipconfig0", Value: fmt.Sprintf("ip=%s/24,gw=%s", addr, addr.Next())},
		{Name: "agent", Value: "1"},
	}, extra...)
	task, err := node.NewVirtualMachine(ctx, 100, opts...)
	waitTask(t, ctx, task, err)

	vm, err := node.VirtualMachine(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}

	task, err = vm.Start(ctx)
	waitTask(t, ctx, task, err)
	return node, vm, addr
}

func installControlPlane(t *testing.T, ctx context.Context, addr netip.Addr) *client.Client {
	t.Helper()

	bundle, err := secrets.NewBundle(secrets.NewFixedClock(time.Now()), config.TalosVersionCurrent)
	if err != nil {
		t.Fatal(err)
	}

	in, err := generate.NewInput("lab", "https://"+addr.String()+":6443", "1.35.2",
		generate.WithSecretsBundle(bundle), generate.WithInstallDisk("/dev/sda"), generate.WithInstallImage(talosInstall))
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := in.Config(mtype.TypeControlPlane)
	if err != nil {
		t.Fatal(err)
	}

	data, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		t.Fatal(err)
	}

	insecure, err := client.New(ctx, client.WithEndpoints(addr.String()), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec
	if err != nil {
		t.Fatal(err)
	}

	defer insecure.Close() //nolint:errcheck

	eventually(t, "maintenance mode", func() bool { _, err := insecure.Disks(ctx); return err == nil })

	if _, err := insecure.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: data, Mode: machine.ApplyConfigurationRequest_AUTO}); err != nil {
		t.Fatal(err)
	}

	tc, err := in.Talosconfig()
	if err != nil {
		t.Fatal(err)
	}

	secure, err := client.New(ctx, client.WithConfig(tc), client.WithEndpoints(addr.String()))
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { secure.Close() }) //nolint:errcheck

	eventually(t, "installed and configured", func() bool { _, err := secure.Version(ctx); return err == nil })

	return secure
}
