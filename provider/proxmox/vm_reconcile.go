package proxmox

import (
	"strings"
)

// reconcile returns the state's view of the inputs after a refresh: for each
// setting the user gave, the value the VM has, in the user's own form when it
// means the same (tags in their order, a MAC in lower case). Settings the user
// did not give stay unset, so that a refresh never invents a diff; drift in a
// setting the user did give shows up as a diff at the next preview.
func reconcile(in, obs VirtualMachineArgs) VirtualMachineArgs {
	r := in // provider-side settings (clone, timeouts, ...) are not in Proxmox: kept
	r.Node = obs.Node
	r.Name = keep(in.Name, obs.Name)
	r.Description = keepBy(in.Description, obs.Description, func(a, b string) bool {
		return strings.TrimRight(a, "\n") == strings.TrimRight(b, "\n")
	})
	if in.Tags != nil {
		if strings.Join(normalizeTags(in.Tags), ";") == strings.Join(normalizeTags(obs.Tags), ";") {
			r.Tags = in.Tags
		} else {
			r.Tags = append([]string{}, obs.Tags...)
		}
	}
	r.Pool = keep(in.Pool, obs.Pool)
	r.ISO = keep(in.ISO, obs.ISO)
	if in.CPU != nil {
		r.CPU = &VirtualMachineCpu{
			Cores:   keepDefault(in.CPU.Cores, obs.CPU.Cores, 1),
			Sockets: keepDefault(in.CPU.Sockets, obs.CPU.Sockets, 1),
			Type:    keep(in.CPU.Type, obs.CPU.Type),
		}
	}
	if in.Memory != nil {
		r.Memory = &VirtualMachineMemory{Dedicated: obs.Memory.Dedicated, Floating: keep(in.Memory.Floating, obs.Memory.Floating)}
	}
	r.Bios = keepDefault(in.Bios, obs.Bios, "seabios")
	r.Machine = keep(in.Machine, obs.Machine)
	r.ScsiHardware = keepDefault(in.ScsiHardware, obs.ScsiHardware, "lsi")
	r.OsType = keepDefault(in.OsType, obs.OsType, "other")
	r.OnBoot = keepDefault(in.OnBoot, obs.OnBoot, false)
	if in.EfiDisk != nil {
		r.EfiDisk = nil
		if obs.EfiDisk != nil {
			r.EfiDisk = &VirtualMachineEfiDisk{Storage: obs.EfiDisk.Storage,
				PreEnrolledKeys: keepDefault(in.EfiDisk.PreEnrolledKeys, obs.EfiDisk.PreEnrolledKeys, false)}
		}
	}
	if in.Disks != nil {
		r.Disks = reconcileDisks(in.Disks, obs.Disks)
	}
	if in.NetworkDevices != nil {
		r.NetworkDevices = reconcileNICs(in.NetworkDevices, obs.NetworkDevices)
	}
	if in.CloudInit != nil {
		r.CloudInit = reconcileCloudInit(in.CloudInit, obs.CloudInit)
	}
	if in.Agent != nil {
		obsEnabled := obs.Agent != nil && obs.Agent.Enabled != nil && *obs.Agent.Enabled
		r.Agent = &VirtualMachineAgent{
			Enabled:        keepDefault(in.Agent.Enabled, &obsEnabled, true),
			WaitForAddress: in.Agent.WaitForAddress,
			Timeout:        in.Agent.Timeout,
		}
		if in.Agent.Enabled == nil && !obsEnabled {
			r.Agent.Enabled = ptr(false)
		}
	}
	r.SmbiosUUID = keepBy(in.SmbiosUUID, obs.SmbiosUUID, strings.EqualFold)
	r.Template = keepDefault(in.Template, obs.Template, false)
	// started defaults to true: a VM stopped outside Pulumi is drift even
	// when the user never wrote `started`
	running := obs.Started == nil || *obs.Started
	if in.Started == nil {
		r.Started = nil
		if !running {
			r.Started = ptr(false)
		}
	} else if *in.Started != running {
		r.Started = ptr(running)
	}
	return r
}

func reconcileDisks(in, obs []VirtualMachineDisk) []VirtualMachineDisk {
	out := []VirtualMachineDisk{}
	for _, d := range in {
		for _, o := range obs {
			if o.Interface != d.Interface {
				continue
			}
			out = append(out, VirtualMachineDisk{
				Interface: d.Interface, Storage: o.Storage, Size: o.Size,
				SSD:      keepDefault(d.SSD, o.SSD, false),
				Discard:  keepDefault(d.Discard, o.Discard, false),
				IOThread: keepDefault(d.IOThread, o.IOThread, false),
				Cache:    keepDefault(d.Cache, o.Cache, "none"),
				// Proxmox does not keep where a disk came from
				ImportFrom: d.ImportFrom,
			})
		}
	}
	return out
}

func reconcileNICs(in, obs []VirtualMachineNetworkDevice) []VirtualMachineNetworkDevice {
	out := []VirtualMachineNetworkDevice{}
	for i, d := range in {
		if i >= len(obs) {
			break
		}
		o := obs[i]
		out = append(out, VirtualMachineNetworkDevice{
			Bridge:     o.Bridge,
			Model:      keepDefault(d.Model, o.Model, "virtio"),
			VLANID:     keep(d.VLANID, o.VLANID),
			MACAddress: keepBy(d.MACAddress, o.MACAddress, strings.EqualFold),
			MTU:        keep(d.MTU, o.MTU),
			Firewall:   keepDefault(d.Firewall, o.Firewall, false),
		})
	}
	return out
}

func reconcileCloudInit(in, obs *VirtualMachineCloudInit) *VirtualMachineCloudInit {
	if obs == nil {
		return nil
	}
	r := &VirtualMachineCloudInit{Storage: obs.Storage}
	if in.Interface != nil {
		r.Interface = keepDefault(in.Interface, obs.Interface, cloudInitInterface)
	}
	if in.IPConfigs != nil {
		r.IPConfigs = []VirtualMachineIpConfig{}
		for i, ip := range in.IPConfigs {
			if i >= len(obs.IPConfigs) {
				break
			}
			o := obs.IPConfigs[i]
			r.IPConfigs = append(r.IPConfigs, VirtualMachineIpConfig{
				IPv4: reconcileAddress(ip.IPv4, o.IPv4), IPv6: reconcileAddress(ip.IPv6, o.IPv6)})
		}
	}
	if in.DNS != nil {
		r.DNS = &VirtualMachineDns{}
		var o VirtualMachineDns
		if obs.DNS != nil {
			o = *obs.DNS
		}
		if in.DNS.Servers != nil {
			r.DNS.Servers = o.Servers
			if strings.Join(in.DNS.Servers, " ") == strings.Join(o.Servers, " ") {
				r.DNS.Servers = in.DNS.Servers
			}
		}
		r.DNS.Domain = keep(in.DNS.Domain, o.Domain)
	}
	return r
}

func reconcileAddress(in, obs *VirtualMachineIpAddress) *VirtualMachineIpAddress {
	if in == nil || obs == nil {
		return obs
	}
	return &VirtualMachineIpAddress{Address: obs.Address, Gateway: keep(in.Gateway, obs.Gateway)}
}

// keep returns the user's value when it equals the observed one, the
// observed value when it differs, and nil when the user gave none.
func keep[T comparable](in, obs *T) *T {
	return keepBy(in, obs, func(a, b T) bool { return a == b })
}

func keepBy[T any](in, obs *T, eq func(a, b T) bool) *T {
	if in == nil {
		return nil
	}
	if obs != nil && eq(*in, *obs) {
		return in
	}
	return obs
}

// keepDefault is keep for settings where "absent" in Proxmox means def.
func keepDefault[T comparable](in, obs *T, def T) *T {
	if in == nil {
		return nil
	}
	o := def
	if obs != nil {
		o = *obs
	}
	if *in == o {
		return in
	}
	return &o
}
