package plan

import (
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// Defaults that are not obvious from a zero value.
const (
	DefaultControlPlanes = 3
	DefaultCores         = 2
	DefaultSockets       = 1
	DefaultMemoryMiB     = 4096
	DefaultDiskGiB       = 20
	DefaultBridge        = "vmbr0"
	DefaultDiskStorage   = "local-lvm"
	DefaultISOStorage    = "local"
	DefaultCPUType       = "x86-64-v2-AES"
	GuestAgentExtension  = "siderolabs/qemu-guest-agent"
	kubernetesAPIPort    = 6443
)

// checkCluster checks and resolves the cluster-wide inputs.
func (b *builder) checkCluster() {
	s := &b.spec
	switch {
	case s.Name == "":
		b.probs.add("clusterName", "the cluster needs a name (a DNS label such as \"homelab\"); it prefixes every hostname")
	case !checkDNSLabel(s.Name):
		b.probs.add("clusterName", "%q is not a DNS label: use lowercase letters, digits and '-', at most 63 characters", s.Name)
	}
	b.resolveVersions()
	b.checkEndpoint()
	for i, san := range s.ExtraSANs {
		if !isIPOrDNSName(san) {
			b.probs.add(idx("extraSans", i), "%q is neither an IP address nor a DNS name (no scheme or port)", san)
		}
	}
	b.checkImage()
	b.resolveImages()
	b.checkNIC("network", &s.Network.NIC, false)
	if s.Network.Secondary != nil {
		b.checkNIC("network.secondary", s.Network.Secondary, true)
	}
	b.checkDisks()
	b.checkVMOptions()
	b.checkCNI()
	b.checkCCM()
	b.checkMirrors()
	b.checkManifests()
	b.checkGitOps()
}

// checkEndpoint normalises an explicit endpoint to https://host:port.
func (b *builder) checkEndpoint() {
	e := strings.TrimSpace(b.spec.Endpoint)
	if e == "" {
		return
	}
	hostport := e
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil || u.Scheme != "https" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			b.probs.add("endpoint", "%q is not an https URL of the API server (like https://k8s.example.com:6443)", e)
			return
		}
		hostport = u.Host
	}
	host, port := hostport, strconv.Itoa(kubernetesAPIPort)
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		b.probs.add("endpoint", "%q has an invalid port", e)
		return
	}
	if !isIPOrDNSName(host) {
		b.probs.add("endpoint", "%q does not name a host: give a DNS name or an IP address", e)
		return
	}
	b.plan.Cluster.Endpoint = "https://" + net.JoinHostPort(host, port)
	b.endpointHost = host
}

func (b *builder) checkImage() {
	im := &b.spec.Image
	out := &b.plan.Cluster.Image
	out.Platform = orDefault(im.Platform, "nocloud")
	if out.Platform != "nocloud" {
		b.probs.add("image.platform", "%q is not supported: use \"nocloud\"; node addresses come from the Proxmox cloud-init drive, which Talos reads only on the nocloud platform", im.Platform)
	}
	exts := im.Extensions
	if exts == nil {
		exts = []string{GuestAgentExtension}
	}
	out.Extensions = []string{}
	for _, e := range exts {
		if e != "" && !strings.Contains(e, "/") {
			e = "siderolabs/" + e // official extensions are siderolabs/<name>
		}
		out.Extensions = append(out.Extensions, e)
	}
	out.KernelArgs = slices.Clone(im.KernelArgs)
	if out.KernelArgs == nil {
		out.KernelArgs = []string{}
	}
	if err := (talosconfig.Schematic{Extensions: out.Extensions}).Check(); err != nil {
		b.probs.add("image.extensions", "%v", err)
		return
	}
	if err := (talosconfig.Schematic{KernelArgs: out.KernelArgs}).Check(); err != nil {
		b.probs.add("image.kernelArgs", "%v (give each argument as its own list entry)", err)
		return
	}
	if !slices.Contains(out.Extensions, GuestAgentExtension) {
		b.warn("image.extensions lacks %s: Proxmox will not see the nodes' addresses and cannot shut them down gracefully", GuestAgentExtension)
	}
	if t := im.Template; t != nil && !validVMID(t.VMID) {
		b.probs.add("image.template.vmId", "%d is not a Proxmox VM id (100-999999999)", t.VMID)
	}
	out.SchematicID, _ = talosconfig.Schematic{Extensions: out.Extensions, KernelArgs: out.KernelArgs}.ID() //nolint:errcheck // checked above
}

// resolveImages computes the ISO and installer URLs once the Talos version
// is known.
func (b *builder) resolveImages() {
	out := &b.plan.Cluster.Image
	if out.SchematicID == "" || b.plan.Cluster.TalosVersion == "" {
		return // already reported
	}
	imgs, err := talosconfig.FactoryURLs(out.SchematicID, b.plan.Cluster.TalosVersion, talosconfig.FactoryOptions{
		BaseURL:           b.spec.Image.FactoryURL,
		InstallerRegistry: b.spec.Image.InstallerRegistry,
		Platform:          out.Platform,
	})
	if err != nil {
		field := "image.factoryUrl"
		if strings.Contains(err.Error(), "installer registry") {
			field = "image.installerRegistry"
		}
		b.probs.add(field, "%v", err)
		return
	}
	out.ISO, out.Installer = imgs.ISO, imgs.Installer
}

// checkNIC checks a NIC's Proxmox settings (pve-api net[n]: tag 1-4094,
// mtu 1 or 576-65520).
func (b *builder) checkNIC(field string, n *NIC, secondary bool) {
	if secondary && n.Bridge == "" {
		b.probs.add(field+".bridge", "the secondary network needs the bridge its NIC attaches to, e.g. \"vmbr1\"")
	}
	if n.VLAN < 0 || n.VLAN > 4094 {
		b.probs.add(field+".vlan", "%d is not a VLAN tag: use 1-4094, or 0 for untagged", n.VLAN)
	}
	// qemu-server: 1 means the bridge's MTU, otherwise 576-65520 (the
	// VirtualMachine resource checks the same, but in its own terms).
	if n.MTU < 0 || n.MTU > 65520 || n.MTU > 1 && n.MTU < 576 {
		b.probs.add(field+".mtu", "%d is not an MTU Proxmox accepts: use 576-65520, or leave mtu out (0) to keep the bridge's", n.MTU)
	}
}

// maxVolumeName is the longest user volume name: the partition label
// "u-<name>" has at most 36 characters (machinery constants.PartitionLabelLength).
const maxVolumeName = 34

// diskLimits is the highest index per disk bus (pve-api: scsi[n] 0-30,
// virtio[n] 0-15, sata[n] 0-5).
var diskLimits = map[string]int{"scsi": 30, "virtio": 15, "sata": 5}

func (b *builder) checkDisks() {
	iface := orDefault(b.spec.DiskInterface, "scsi")
	if _, ok := diskLimits[iface]; !ok {
		b.probs.add("diskInterface", "%q is not a disk bus: use \"scsi\", \"virtio\" or \"sata\"", b.spec.DiskInterface)
		return
	}
	b.diskBus = iface
	b.installDisk = deviceName(iface, 0)
	if d := b.spec.InstallDisk; d != "" {
		if !strings.HasPrefix(d, "/dev/") {
			b.probs.add("installDisk", "%q is not a device path like /dev/sda", d)
		}
		b.installDisk = d
	}
}

// deviceName is the Linux device of the n-th disk on a bus: SCSI and SATA
// disks are sdX, virtio-blk disks vdX (Talos on Proxmox: /dev/sda for scsi,
// /dev/vda for virtio).
func deviceName(bus string, n int) string {
	prefix := "/dev/sd"
	if bus == "virtio" {
		prefix = "/dev/vd"
	}
	return prefix + string(rune('a'+n))
}

// pre-x86-64-v2 CPU models; Talos images for amd64 halt at boot on them
// (docs.siderolabs.com/talos/v1.11/getting-started/system-requirements:
// "Proxmox's kvm64").
var preV2CPUs = []string{"486", "athlon", "conroe", "core2duo", "coreduo", "kvm32", "kvm64", "penryn", "pentium", "pentium2", "pentium3", "phenom", "qemu32", "qemu64"}

var pveTag = regexp.MustCompile(`(?i)^[a-z0-9_][a-z0-9_+.-]*$`) // pve-common: pve_verify_tag

func (b *builder) checkVMOptions() {
	o := &b.spec.VM
	b.cpuType = orDefault(o.CPUType, DefaultCPUType)
	if slices.Contains(preV2CPUs, strings.ToLower(b.cpuType)) {
		b.probs.add("vm.cpuType", "%q lacks x86-64-v2, which Talos needs to boot: use \"x86-64-v2-AES\" or \"host\"", o.CPUType)
	}
	for i, t := range o.Tags {
		if !pveTag.MatchString(t) {
			b.probs.add(idx("vm.tags", i), "%q is not a Proxmox tag: use letters, digits, '_', '-', '+' and '.', not starting with '-', '+' or '.'", t)
		} else if reservedTag(t) {
			b.probs.add(idx("vm.tags", i), "%q is one of the tags the component finds its VMs by (%s, %s, %s, %s<cluster>, %s<pool>, %s<hash>): choose another tag",
				t, TagManaged, RoleControlPlane, RoleWorker, TagClusterPrefix, TagPoolPrefix, TagStackPrefix)
		}
	}
}

func (b *builder) checkHosts() {
	hosts := b.spec.Hosts
	if len(hosts) == 0 {
		b.probs.add("hosts", "no Proxmox hosts given: list at least one node of your Proxmox cluster to place VMs on")
		return
	}
	seen := map[string]int{}
	for i, h := range hosts {
		f := idx("hosts", i)
		if h.Node == "" {
			b.probs.add(f+".node", "a host needs the Proxmox node name, e.g. \"pve1\"")
			continue
		}
		if j, dup := seen[h.Node]; dup {
			b.probs.add(f+".node", "host %q is also hosts[%d]: list each Proxmox node once", h.Node, j)
			continue
		}
		seen[h.Node] = i
		if h.TemplateVMID != 0 && !validVMID(h.TemplateVMID) {
			b.probs.add(f+".templateVmId", "%d is not a Proxmox VM id (100-999999999)", h.TemplateVMID)
		}
		if b.facts.Hosts != nil {
			if _, ok := b.facts.Hosts[h.Node]; !ok {
				b.probs.add(f+".node", "%q is not a node of the Proxmox cluster; its nodes are: %s", h.Node, strings.Join(slices.Sorted(maps.Keys(b.facts.Hosts)), ", "))
			}
		}
	}
	if b.facts.Hosts == nil {
		b.warn(NoHostFactsWarning)
	}
}

// checkSizes resolves default sizes and checks them against Talos' minimums
// (docs.siderolabs.com system requirements: control plane 2 cores, 2 GiB,
// 10 GiB disk; worker 1 core, 1 GiB, 10 GiB disk).
func (b *builder) checkSizes() {
	b.cpSize = b.checkSize("controlPlane.size", b.spec.ControlPlane.Size, 2, 2048)
	b.poolSizes = make([]hardware, len(b.spec.WorkerPools))
	for i := range b.spec.WorkerPools {
		wp := &b.spec.WorkerPools[i]
		f := idx("workerPools", i)
		b.poolSizes[i] = b.checkSize(f+".size", wp.Size, 1, 1024)
		for j, d := range wp.DataDisks {
			df := idx(f+".dataDisks", j)
			if d.SizeGiB < 1 {
				b.probs.add(df+".size", "%d GiB: a data disk needs a size of at least 1 GiB", d.SizeGiB)
			}
			if d.Volume != "" && (!checkDNSLabel(d.Volume) || len(d.Volume) > maxVolumeName) {
				b.probs.add(df+".volume", "%q is not a valid volume name (a DNS label of at most %d characters); Talos mounts it at /var/mnt/<volume>", d.Volume, maxVolumeName)
			}
			if d.Volume != "" && b.plan.Cluster.TalosVersion != "" {
				if v, err := talosconfig.ParseVersion(b.plan.Cluster.TalosVersion); err == nil && !userVolumes(v) {
					b.probs.add(df+".volume", "user volumes need Talos v1.10 or newer (UserVolumeConfig); the cluster runs %s: leave volume empty for a raw disk or upgrade Talos first", b.plan.Cluster.TalosVersion)
				}
			}
		}
		if b.diskBus != "" && len(wp.DataDisks) > diskLimits[b.diskBus] {
			b.probs.add(f+".dataDisks", "%d data disks do not fit on the %s bus (at most %d besides the OS disk)", len(wp.DataDisks), b.diskBus, diskLimits[b.diskBus])
		}
	}
}

// checkSize resolves a size's defaults. A value given as 0 is refused, not
// taken for the default: it says something the VM cannot be.
func (b *builder) checkSize(field string, sz Size, minCores, minMemMiB int) hardware {
	given := func(name string, v *int, def int, unit string) int {
		if v == nil {
			return def
		}
		if *v == 0 {
			b.probs.add(field+"."+name, "0%s is not a size: give at least the minimum, or leave %s out for the default %d%s", unit, name, def, unit)
		}
		return *v
	}
	hw := hardware{
		Cores:     given("cores", sz.Cores, DefaultCores, ""),
		Sockets:   given("sockets", sz.Sockets, DefaultSockets, ""),
		MemoryMiB: given("memory", sz.MemoryMiB, DefaultMemoryMiB, " MiB"),
		DiskGiB:   given("diskSize", sz.DiskGiB, DefaultDiskGiB, " GiB"),
	}
	if hw.Cores == 0 || hw.Sockets == 0 || hw.MemoryMiB == 0 || hw.DiskGiB == 0 {
		return hw // reported above
	}
	if hw.Sockets < 0 {
		b.probs.add(field+".sockets", "%d sockets: a VM has at least 1", hw.Sockets)
	}
	if hw.Cores*hw.Sockets < minCores {
		b.probs.add(field+".cores", "%d vCPUs is below Talos' minimum of %d for this role", hw.Cores*hw.Sockets, minCores)
	}
	if hw.MemoryMiB < minMemMiB {
		hint := ""
		if hw.MemoryMiB <= 64 {
			hint = " (the unit is MiB: 4 GiB is 4096)"
		}
		b.probs.add(field+".memory", "%d MiB is below Talos' minimum of %d MiB for this role%s", hw.MemoryMiB, minMemMiB, hint)
	}
	if hw.DiskGiB < 10 {
		b.probs.add(field+".diskSize", "%d GiB is below Talos' minimum system disk of 10 GiB", hw.DiskGiB)
	}
	return hw
}

func validVMID(id int) bool { return id >= 100 && id <= 999999999 }

var dnsName = regexp.MustCompile(`^(\*\.)?([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)

func isIPOrDNSName(s string) bool {
	if net.ParseIP(s) != nil {
		return true
	}
	return len(s) <= 253 && dnsName.MatchString(s)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDefaultInt(i, def int) int {
	if i == 0 {
		return def
	}
	return i
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// reservedTag: a user tag the component's own tags would be confused with
// when it reads its VMs back (Rebuild, CheckStack).
func reservedTag(t string) bool {
	t = strings.ToLower(t)
	switch t {
	case TagManaged, string(RoleControlPlane), string(RoleWorker):
		return true
	}
	for _, p := range []string{TagClusterPrefix, TagPoolPrefix, TagStackPrefix} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// NoHostFactsWarning is the plan's warning when it has no facts about the
// hosts (an offline preview says it in its own words instead).
const NoHostFactsWarning = "host capacity was not checked: no Proxmox facts were available"
