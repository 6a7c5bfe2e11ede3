package talos

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/etcd"
	"github.com/siderolabs/talos/pkg/machinery/resources/hardware"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"github.com/siderolabs/talos/pkg/machinery/resources/v1alpha1"
)

// machineConfigs are the active and the persisted (STATE) machine configs.
type machineConfigs struct {
	active     config.Provider
	persistent config.Provider
}

// resourceSnapshot is the part of a node the resources publish.
type resourceSnapshot struct {
	stage      runtime.MachineStage
	ready      bool
	unmet      []runtime.UnmetCondition
	addr       netip.Prefix // the node's address with its cloud-init prefix length
	gateway    netip.Addr
	nics       []NIC
	machine    Machine
	image      Image
	extensions []string
	hostname   string
	devices    []blockDevice
	systemDisk string
	configs    *machineConfigs // nil: unchanged since the last publish
	active     config.Provider // nil: maintenance mode
	etcdMember uint64
	services   []serviceState
	members    []memberInfo // discovery; nil when the node does not take part
	events     *eventBuffer
	logs       *bootLogs
	// nodename is the Kubernetes node name; staticPodsUp: a control
	// plane's kubelet runs its static pods (since bootedAt).
	nodename     string
	staticPodsUp bool
	bootedAt     time.Time
	// urlManifests: the manifests named by URL the node rendered this
	// boot (manifest_fetch.go).
	urlManifests []*k8s.Manifest
}

// publishResources writes a snapshot into the node's resource state.
func publishResources(st state.State, snap resourceSnapshot) error {
	ctx := context.Background()

	for _, publish := range []func(context.Context, state.State, resourceSnapshot) error{
		publishRuntime,
		publishBlock,
		publishConfigs,
		publishNetwork,
		publishEtcd,
		publishServices,
		publishMembers,
		publishStaticPods,
		publishKubeConfigs,
		publishManifests,
	} {
		if err := publish(ctx, st, snap); err != nil {
			return err
		}
	}

	return nil
}

func publishRuntime(ctx context.Context, st state.State, snap resourceSnapshot) error {
	ms := runtime.NewMachineStatus()
	ms.TypedSpec().Stage = snap.stage
	ms.TypedSpec().Status.Ready = snap.ready
	ms.TypedSpec().Status.UnmetConditions = snap.unmet

	changed, err := upsertChanged(ctx, st, ms)
	if err != nil {
		return err
	}

	// runtime/machine_status_publisher.go: every change is an event.
	if changed {
		ev := &machine.MachineStatusEvent{
			Stage:  machine.MachineStatusEvent_MachineStage(snap.stage),
			Status: &machine.MachineStatusEvent_MachineStatus{Ready: snap.ready},
		}

		for _, c := range snap.unmet {
			ev.Status.UnmetConditions = append(ev.Status.UnmetConditions,
				&machine.MachineStatusEvent_MachineStatus_UnmetCondition{Name: c.Name, Reason: c.Reason})
		}

		snap.events.publish(ev, "")
	}

	v := runtime.NewVersion()
	v.TypedSpec().Version = snap.image.Version

	if err := upsert(ctx, st, v); err != nil {
		return err
	}

	// QEMU's SMBIOS as Proxmox sets it (smbios1: uuid=...).
	si := hardware.NewSystemInformation(hardware.SystemInformationID)
	si.TypedSpec().Manufacturer = "QEMU"
	si.TypedSpec().ProductName = "Standard PC (i440FX + PIIX, 1996)"
	si.TypedSpec().Version = "pc-i440fx-9.2"
	si.TypedSpec().UUID = snap.machine.UUID
	si.TypedSpec().WakeUpType = "Power Switch"

	if err := upsert(ctx, st, si); err != nil {
		return err
	}

	return replaceAll(ctx, st, runtime.NewExtensionStatus(runtime.NamespaceName, "").Metadata(), extensionStatuses(snap))
}

// extensionStatuses lists the system extensions and, for Image Factory
// images, the "schematic" pseudo-extension carrying the schematic ID (as
// factory-built images do). The lab does not know the extensions' own
// versions: each reports the Talos release it was built for.
func extensionStatuses(snap resourceSnapshot) []*runtime.ExtensionStatus {
	var out []*runtime.ExtensionStatus

	add := func(name, version, description string) {
		r := runtime.NewExtensionStatus(runtime.NamespaceName, resource.ID(strconv.Itoa(len(out))))
		r.TypedSpec().Image = strconv.Itoa(len(out)) + "." + name + ".sqsh"
		r.TypedSpec().Metadata.Name = name
		r.TypedSpec().Metadata.Version = version
		r.TypedSpec().Metadata.Author = "Sidero Labs"
		r.TypedSpec().Metadata.Description = description
		out = append(out, r)
	}

	for _, ext := range snap.extensions {
		name := ext[strings.LastIndex(ext, "/")+1:]
		add(name, snap.image.Version, "Official Talos system extension "+ext+".")
	}

	if snap.image.Schematic != "" {
		add("schematic", snap.image.Schematic, "Image Factory schematic ID.")
	}

	return out
}

func publishBlock(ctx context.Context, st state.State, snap resourceSnapshot) error {
	var disks []*block.Disk

	for _, dev := range snap.devices {
		d := block.NewDisk(block.NamespaceName, dev.DevName)
		fillDiskSpec(d.TypedSpec(), dev)
		disks = append(disks, d)
	}

	if err := replaceAll(ctx, st, block.NewDisk(block.NamespaceName, "").Metadata(), disks); err != nil {
		return err
	}

	sd := block.NewSystemDisk(block.NamespaceName, block.SystemDiskID)
	if snap.systemDisk == "" {
		if err := destroyIfExists(ctx, st, sd.Metadata()); err != nil {
			return err
		}
	} else {
		sd.TypedSpec().DiskID = snap.systemDisk
		sd.TypedSpec().DevPath = "/dev/" + snap.systemDisk

		if err := upsert(ctx, st, sd); err != nil {
			return err
		}
	}

	return publishVolumes(ctx, st, snap)
}

func publishConfigs(ctx context.Context, st state.State, snap resourceSnapshot) error {
	if snap.configs == nil {
		return nil
	}

	for _, mc := range []struct {
		id  resource.ID
		cfg config.Provider
	}{{configres.ActiveID, snap.configs.active}, {configres.PersistentID, snap.configs.persistent}} {
		if mc.cfg != nil {
			if err := upsert(ctx, st, configres.NewMachineConfigWithID(mc.cfg, mc.id)); err != nil {
				return err
			}
		} else if err := destroyIfExists(ctx, st, configres.NewMachineConfigWithID(nil, mc.id).Metadata()); err != nil {
			return err
		}
	}

	return nil
}

func publishEtcd(ctx context.Context, st state.State, snap resourceSnapshot) error {
	em := etcd.NewMember(etcd.NamespaceName, etcd.LocalMemberID)
	if snap.etcdMember == 0 {
		return destroyIfExists(ctx, st, em.Metadata())
	}

	em.TypedSpec().MemberID = etcd.FormatMemberID(snap.etcdMember)

	return upsert(ctx, st, em)
}

func publishServices(ctx context.Context, st state.State, snap resourceSnapshot) error {
	var services []*v1alpha1.Service

	for _, svc := range snap.services {
		r := v1alpha1.NewService(svc.id)
		r.TypedSpec().Running = svc.state == "Running"
		r.TypedSpec().Healthy = svc.healthy
		r.TypedSpec().Unknown = !svc.healthKnown
		services = append(services, r)

		// A service's state changes are events (system/service_events.go).
		if changed, err := upsertChanged(ctx, st, r); err != nil {
			return err
		} else if changed {
			snap.events.publish(svc.event(), "")
			snap.logs.service(svc.id).add(fmt.Sprintf("%s [talos] service[%s](%s): %s\n",
				time.Now().UTC().Format("2006/01/02 15:04:05"), svc.id, svc.state, svc.msg))
		}
	}

	return replaceAll(ctx, st, v1alpha1.NewService("").Metadata(), services)
}

// publishNodename: the Kubernetes node name is the hostname, lowercased
// (k8s/nodename.go).
func publishNodename(ctx context.Context, st state.State, hostname string) error {
	nn := k8s.NewNodename(k8s.NamespaceName, k8s.NodenameID)
	nn.TypedSpec().Nodename = strings.ToLower(hostname)
	nn.TypedSpec().HostnameVersion = "1"

	return upsert(ctx, st, nn)
}

func fillDiskSpec(spec *block.DiskSpec, dev blockDevice) {
	spec.DevPath = "/dev/" + dev.DevName
	spec.SetSize(dev.SizeBytes)
	spec.Rotational = !dev.SSD
	spec.Transport = dev.Transport
	spec.IOSize = 512
	spec.SectorSize = 512
	spec.SubSystem = "/sys/class/block"

	if dev.Transport == "virtio" {
		spec.Modalias = "virtio:d00000002v00001AF4"
		spec.BusPath = "/pci0000:00/0000:00:0a.0/virtio2"
	} else {
		spec.Model = "QEMU HARDDISK"
		spec.Serial = "drive-" + dev.Name
		spec.Modalias = "scsi:t-0x00"
		spec.BusPath = "/pci0000:00/0000:00:05.0/0000:01:01.0/virtio1/host2/target2:0:0/2:0:0:0"
	}
}
