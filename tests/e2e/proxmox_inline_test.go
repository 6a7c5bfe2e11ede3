package e2e

import (
	"context"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// inlineSettings are what the program below builds; the test changes them
// between runs, as a user edits a program.
type inlineSettings struct {
	address     string
	cores       int
	cloneVMID   int
	adoptLegacy bool
}

// vmsInline is the Go program of the lifecycle test, written with the
// generated Go SDK the way a user writes it.
func vmsInline(s *inlineSettings) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		iso, err := proxmox.NewDownloadFile(ctx, "iso", &proxmox.DownloadFileArgs{
			Node:     pulumi.String("pve1"),
			Storage:  pulumi.String("local"),
			Url:      pulumi.String("https://images.example.com/lablinux/qemu-guest-agent/lablinux-1.0.iso"),
			FileName: pulumi.String("lablinux-1.0-agent.iso"),
		})
		if err != nil {
			return err
		}
		booted, err := proxmox.NewVirtualMachine(ctx, "booted", &proxmox.VirtualMachineArgs{
			Node:   pulumi.String("pve1"),
			Name:   pulumi.String("booted"),
			Tags:   pulumi.StringArray{pulumi.String("demo"), pulumi.String("iso")},
			Iso:    iso.VolumeId,
			OsType: proxmox.OsTypeL26,
			Memory: &proxmox.VirtualMachineMemoryArgs{Dedicated: pulumi.Int(1024)},
			Disks: proxmox.VirtualMachineDiskArray{&proxmox.VirtualMachineDiskArgs{
				Interface: pulumi.String("scsi0"), Storage: pulumi.String("local-lvm"), Size: pulumi.Int(4),
			}},
			NetworkDevices: proxmox.VirtualMachineNetworkDeviceArray{&proxmox.VirtualMachineNetworkDeviceArgs{
				Bridge: pulumi.String("vmbr0"),
			}},
			CloudInit: &proxmox.VirtualMachineCloudInitArgs{
				Storage: pulumi.String("local-lvm"),
				IpConfigs: proxmox.VirtualMachineIpConfigArray{&proxmox.VirtualMachineIpConfigArgs{
					Ipv4: &proxmox.VirtualMachineIpAddressArgs{Address: pulumi.String(s.address + "/24")},
				}},
			},
			Agent: &proxmox.VirtualMachineAgentArgs{Enabled: pulumi.Bool(true), Timeout: pulumi.Int(60)},
		})
		if err != nil {
			return err
		}
		cloneArgs := &proxmox.VirtualMachineArgs{
			Node:  pulumi.String("pve1"),
			Name:  pulumi.String("cloned"),
			Clone: &proxmox.VirtualMachineCloneArgs{VmId: pulumi.Int(templateVMID)},
			Cpu:   &proxmox.VirtualMachineCpuArgs{Cores: pulumi.Int(s.cores)},
		}
		if s.cloneVMID != 0 {
			cloneArgs.VmId = pulumi.Int(s.cloneVMID)
		}
		cloned, err := proxmox.NewVirtualMachine(ctx, "cloned", cloneArgs)
		if err != nil {
			return err
		}
		if s.adoptLegacy {
			// adopt a (stopped) VM made outside Pulumi with the import
			// resource option; the settings the program does not give are
			// not managed and stay as they are
			if _, err := proxmox.NewVirtualMachine(ctx, "legacy", &proxmox.VirtualMachineArgs{
				Node: pulumi.String("pve2"), Name: pulumi.String("legacy"), Started: pulumi.Bool(false),
			}, pulumi.Import(pulumi.ID("pve2/960"))); err != nil {
				return err
			}
		}
		ctx.Export("bootedId", booted.VmId)
		ctx.Export("bootedAddresses", booted.Ipv4Addresses)
		ctx.Export("clonedId", cloned.VmId)
		return nil
	}
}

// changedOnly drops the unchanged resources from a change summary.
func changedOnly[K ~string](s map[K]int) map[string]int {
	out := map[string]int{}
	for k, v := range s {
		if k != "same" && v > 0 {
			out[string(k)] = v
		}
	}
	return out
}

// The issue-2 lifecycle as a Go program through the Automation API.
func TestProxmoxInlineGoLifecycle(t *testing.T) {
	t.Parallel()
	l := startProxmoxLab(t)
	l.makeVM(t, "pve1", templateVMID, "base-template", true)
	env := harness.NewEnv(t)
	s := &inlineSettings{address: l.address(41), cores: 1}
	stack := harness.InlineStack(t, env, "vms-inline", vmsInline(s), &l.conn)
	ctx := context.Background()

	up, err := stack.Up(ctx)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	cloned := int(up.Outputs["clonedId"].Value.(float64))
	if addrs, _ := up.Outputs["bootedAddresses"].Value.([]any); len(addrs) != 1 || addrs[0] != l.address(41) {
		t.Errorf("bootedAddresses %v, want [%s]", up.Outputs["bootedAddresses"].Value, l.address(41))
	}
	if vms := l.vmIDs(); len(vms) != 2 {
		t.Fatalf("lab after up: %+v", vms)
	}
	expectNoChanges(t, stack)

	s.cores = 2
	up, err = stack.Up(ctx)
	if err != nil {
		t.Fatalf("up cores: %v", err)
	}
	if got := changedOnly(*up.Summary.ResourceChanges); len(got) != 1 || got["update"] != 1 {
		t.Fatalf("cores change: %v, want one in-place update", got)
	}
	if cur, _, _ := l.VMConfig(cloned); cur["cores"] != "2" {
		t.Fatalf("cores in Proxmox %q", cur["cores"])
	}
	expectNoChanges(t, stack)

	if err := l.SetVMConfig(cloned, "cores", "3"); err != nil {
		t.Fatal(err)
	}
	if _, err := stack.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	pr, err := stack.Preview(ctx)
	if err != nil {
		t.Fatalf("preview after drift: %v", err)
	}
	if got := changedOnly(pr.ChangeSummary); got["update"] != 1 || len(got) != 1 {
		t.Fatalf("drift after refresh: %v, want one update", got)
	}

	s.cloneVMID = 970
	up, err = stack.Up(ctx)
	if err != nil {
		t.Fatalf("up replace: %v", err)
	}
	if got := changedOnly(*up.Summary.ResourceChanges); got["replace"] != 1 {
		t.Fatalf("a new vmId: %v, want one replace", got)
	}
	if vms := l.vmIDs(); vms[970].Name != "cloned" || vms[cloned].Name != "" {
		t.Fatalf("after replace: %+v", vms)
	}

	l.makeVM(t, "pve2", 960, "legacy", false)
	s.adoptLegacy = true
	up, err = stack.Up(ctx)
	if err != nil {
		t.Fatalf("up with import: %v", err)
	}
	if got := changedOnly(*up.Summary.ResourceChanges); got["import"] != 1 || len(got) != 1 {
		t.Fatalf("import: %v\n%s", got, up.StdOut)
	}
	if cur, _, _ := l.VMConfig(960); cur["scsi0"] == "" || cur["net0"] == "" || cur["memory"] != "512" {
		t.Fatalf("the import changed settings the program does not give: %v", cur)
	}
	expectNoChanges(t, stack)

	l.destroyDeletesISO(t, "pve1", "lablinux-1.0-agent.iso", func() {
		if _, err := stack.Destroy(ctx); err != nil {
			t.Fatalf("destroy: %v", err)
		}
	})
	if vms := l.vmIDs(); len(vms) != 0 {
		t.Fatalf("destroy left VMs: %+v", vms)
	}
}

func expectNoChanges(t *testing.T, stack auto.Stack) {
	t.Helper()
	pr, err := stack.Preview(context.Background(), optpreview.ExpectNoChanges(), optpreview.Diff())
	if err != nil {
		t.Fatalf("preview reports changes: %v", err)
	}
	if got := changedOnly(pr.ChangeSummary); len(got) != 0 {
		t.Fatalf("preview reports %v:\n%s", got, pr.StdOut)
	}
}
