package talos

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	cosiv1alpha1 "github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/resource/meta"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/cosi-project/runtime/pkg/state/impl/inmem"
	"github.com/cosi-project/runtime/pkg/state/impl/namespaced"
	cosiserver "github.com/cosi-project/runtime/pkg/state/protobuf/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/etcd"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	"github.com/siderolabs/talos/pkg/machinery/resources/network"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"github.com/siderolabs/talos/pkg/machinery/resources/v1alpha1"
	"github.com/siderolabs/talos/pkg/machinery/role"
)

// The node's resource state (COSI), served read-only over the API as Talos
// does, for the resources the simulator maintains. Resource definitions and
// namespaces are registered like machined registers them, so `talosctl get`
// style clients resolve types.
var servedResources = []meta.ResourceDefinitionProvider{
	&block.Disk{},
	&block.SystemDisk{},
	&configres.MachineConfig{},
	&etcd.Member{},
	&k8s.Nodename{},
	&network.HostnameStatus{},
	&network.NodeAddress{},
	&runtime.MachineStatus{},
	&v1alpha1.Service{},
}

func newResourceState() (state.State, error) {
	st := state.WrapCore(namespaced.NewState(inmem.Build))
	ctx := context.Background()

	namespaces := map[resource.Namespace]struct{}{}

	for _, p := range servedResources {
		spec := p.ResourceDefinition()

		rd, err := meta.NewResourceDefinition(spec)
		if err != nil {
			return nil, err
		}

		if err := st.Create(ctx, rd); err != nil {
			return nil, err
		}

		namespaces[spec.DefaultNamespace] = struct{}{}
	}

	for ns := range namespaces {
		if err := st.Create(ctx, meta.NewNamespace(ns, meta.NamespaceSpec{})); err != nil {
			return nil, err
		}
	}

	return st, nil
}

// accessPolicy is Talos's COSI access rule over the API
// (internal/app/resources/access.go): read-only, known types and namespaces
// only, sensitive types (the machine config) for os:admin only.
func accessPolicy(st state.State) state.FilteringRule {
	return func(ctx context.Context, access state.Access) error {
		if !access.Verb.Readonly() {
			return status.Error(codes.PermissionDenied, "write access is not allowed")
		}

		rd, err := safe.StateGet[*meta.ResourceDefinition](ctx, st,
			resource.NewMetadata(meta.NamespaceName, meta.ResourceDefinitionType, strings.ToLower(access.ResourceType), resource.VersionUndefined))
		if err != nil {
			if state.IsNotFoundError(err) {
				return status.Error(codes.PermissionDenied, fmt.Sprintf("resource type %q is not supported", access.ResourceType))
			}

			return err
		}

		if rd.TypedSpec().Sensitivity == meta.Sensitive && !rolesFrom(ctx).Includes(role.Admin) {
			return errNotAuthorized
		}

		if _, err := safe.StateGet[*meta.Namespace](ctx, st,
			resource.NewMetadata(meta.NamespaceName, meta.NamespaceType, access.ResourceNamespace, resource.VersionUndefined)); err != nil {
			if state.IsNotFoundError(err) {
				return status.Error(codes.PermissionDenied, fmt.Sprintf("namespace %q is not supported", access.ResourceNamespace))
			}

			return err
		}

		return nil
	}
}

func registerResources(srv *grpc.Server, st state.State) {
	filtered := state.WrapCore(state.Filter(st, accessPolicy(st)))
	cosiv1alpha1.RegisterStateServer(srv, cosiserver.NewState(filtered))
}

// upsert creates or replaces a resource.
func upsert(ctx context.Context, st state.State, r resource.Resource) error {
	cur, err := st.Get(ctx, r.Metadata())

	switch {
	case state.IsNotFoundError(err):
		return st.Create(ctx, r)
	case err != nil:
		return err
	}

	r.Metadata().SetVersion(cur.Metadata().Version())

	return st.Update(ctx, r)
}

func destroyIfExists(ctx context.Context, st state.State, md resource.Pointer) error {
	err := st.Destroy(ctx, md)
	if err != nil && !state.IsNotFoundError(err) {
		return err
	}

	return nil
}

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
	addr       netip.Addr
	hostname   string
	devices    []blockDevice
	systemDisk string
	configs    *machineConfigs // nil: unchanged since the last publish
	etcdMember uint64
	services   []serviceState
}

// publishResources writes a snapshot into the node's resource state.
func publishResources(st state.State, snap resourceSnapshot) error {
	ctx := context.Background()

	ms := runtime.NewMachineStatus()
	ms.TypedSpec().Stage = snap.stage
	ms.TypedSpec().Status.Ready = snap.ready
	ms.TypedSpec().Status.UnmetConditions = snap.unmet

	if err := upsert(ctx, st, ms); err != nil {
		return err
	}

	for _, dev := range snap.devices {
		d := block.NewDisk(block.NamespaceName, dev.DevName)
		fillDiskSpec(d.TypedSpec(), dev)

		if err := upsert(ctx, st, d); err != nil {
			return err
		}
	}

	sd := block.NewSystemDisk(block.NamespaceName, block.SystemDiskID)
	if snap.systemDisk != "" {
		sd.TypedSpec().DiskID = snap.systemDisk
		sd.TypedSpec().DevPath = "/dev/" + snap.systemDisk

		if err := upsert(ctx, st, sd); err != nil {
			return err
		}
	} else if err := destroyIfExists(ctx, st, sd.Metadata()); err != nil {
		return err
	}

	if snap.configs != nil {
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
	}

	if snap.addr.IsValid() {
		for _, id := range []resource.ID{network.NodeAddressCurrentID, network.NodeAddressDefaultID, network.NodeAddressRoutedID} {
			na := network.NewNodeAddress(network.NamespaceName, id)
			na.TypedSpec().Addresses = []netip.Prefix{netip.PrefixFrom(snap.addr, 8)}

			if err := upsert(ctx, st, na); err != nil {
				return err
			}
		}
	}

	if snap.hostname != "" {
		hs := network.NewHostnameStatus(network.NamespaceName, network.HostnameID)
		hs.TypedSpec().Hostname = snap.hostname

		if err := upsert(ctx, st, hs); err != nil {
			return err
		}

		nn := k8s.NewNodename(k8s.NamespaceName, k8s.NodenameID)
		nn.TypedSpec().Nodename = strings.ToLower(snap.hostname)
		nn.TypedSpec().HostnameVersion = "1"

		if err := upsert(ctx, st, nn); err != nil {
			return err
		}
	}

	em := etcd.NewMember(etcd.NamespaceName, etcd.LocalMemberID)
	if snap.etcdMember != 0 {
		em.TypedSpec().MemberID = etcd.FormatMemberID(snap.etcdMember)

		if err := upsert(ctx, st, em); err != nil {
			return err
		}
	} else if err := destroyIfExists(ctx, st, em.Metadata()); err != nil {
		return err
	}

	for _, svc := range snap.services {
		r := v1alpha1.NewService(svc.id)
		r.TypedSpec().Running = svc.state == "Running"
		r.TypedSpec().Healthy = svc.healthy
		r.TypedSpec().Unknown = !svc.healthKnown

		if err := upsert(ctx, st, r); err != nil {
			return err
		}
	}

	return nil
}

func fillDiskSpec(spec *block.DiskSpec, dev blockDevice) {
	spec.DevPath = "/dev/" + dev.DevName
	spec.Size = dev.SizeBytes
	spec.Rotational = !dev.SSD
	spec.Transport = dev.Transport
	spec.IOSize = 512
	spec.SectorSize = 512

	if dev.Transport == "virtio" {
		spec.Modalias = "virtio:d00000002v00001AF4"
		spec.BusPath = "/pci0000:00/0000:00:0a.0/virtio2"
		spec.SubSystem = "/sys/class/block"
	} else {
		spec.Model = "QEMU HARDDISK"
		spec.Serial = "drive-" + dev.Name
		spec.Modalias = "scsi:t-0x00"
		spec.BusPath = "/pci0000:00/0000:00:05.0/0000:01:01.0/virtio1/host2/target2:0:0/2:0:0:0"
		spec.SubSystem = "/sys/class/block"
	}
}
