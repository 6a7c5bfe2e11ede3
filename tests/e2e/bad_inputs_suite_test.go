package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Issue 15: plausible mistakes a new user makes, each through the real CLI
// (`pulumi preview` of a YAML program against the lab). Each must fail the
// preview with a message that names the input path and says what to do,
// and the lab must hold nothing new afterwards. One lab and one stack for
// every case (a preview per case) keep the cost to a few CPU minutes.
//
// A case is a resource type, a base property set and one edit; the
// expectation is the input path as the user wrote it and a few words of
// the message (what is wrong, what to do). Build for the class: the edits
// are the kinds of mistakes (zero, negative, wrong unit, wrong form,
// unknown name, conflicting settings, a value of another kind), applied
// across the resources.

type badCase struct {
	name string
	// typ is the resource type; "" is the TalosCluster.
	typ  string
	edit func(props map[string]any)
	// path is the input path the message must name; words are further
	// words it must hold (the reason and the fix).
	path  string
	words []string
}

// set writes value at a path like "network.addressRange.start" or
// "workerPools[0].size.cores" (maps and list entries must exist up to
// the last step, which is created); nil deletes the key.
func set(m map[string]any, path string, value any) {
	parts := strings.Split(path, ".")
	var cur any = m
	for i, part := range parts {
		key, index := part, -1
		if j := strings.IndexByte(part, '['); j >= 0 {
			key = part[:j]
			index, _ = strconv.Atoi(strings.TrimSuffix(part[j+1:], "]"))
		}
		obj := cur.(map[string]any)
		last := i == len(parts)-1
		if index < 0 {
			if last {
				if value == nil {
					delete(obj, key)
				} else {
					obj[key] = value
				}
				return
			}
			if _, ok := obj[key]; !ok {
				obj[key] = map[string]any{}
			}
			cur = obj[key]
			continue
		}
		list := obj[key].([]any)
		if last {
			list[index] = value
			return
		}
		cur = list[index]
	}
}

// deepCopy copies nested maps and lists.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

func badSuiteProgram(t *testing.T, typ string, props map[string]any) string {
	t.Helper()
	res := map[string]any{"type": typ, "properties": props}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2) // withOtherResource adds a resource indented by 2
	if err := enc.Encode(map[string]any{"resources": map[string]any{"bad": res}}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestBadInputSuite(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	a := l.addr
	// A stranger's container holds VMID 150 (VMIDs are unique across VMs
	// and containers); l.VMs() lists VMs only, which must stay none.
	if err := l.PVE.AddContainer("pve2", 150, "stranger-dns"); err != nil {
		t.Fatal(err)
	}

	bases := map[string]map[string]any{
		"proxmoxtalos:TalosCluster": {
			"clusterName":       "suite",
			"talosVersion":      "v1.12.5",
			"kubernetesVersion": "v1.34.1",
			"image":             map[string]any{"factoryUrl": l.FactoryURL()},
			"hosts":             []any{map[string]any{"node": "pve1"}, map[string]any{"node": "pve2"}},
			"network": map[string]any{
				"subnet": l.AddressBlock().String(), "gateway": a(1),
				"addressRange": map[string]any{"start": a(10), "end": a(40)},
				"dnsServers":   []any{a(1)},
			},
			"vip":          a(5),
			"controlPlane": map[string]any{"count": 1},
			"workerPools":  []any{map[string]any{"name": "workers", "count": 1}},
		},
		"proxmoxtalos:proxmox:VirtualMachine": {
			"node": "pve1", "name": "suite-vm", "osType": "l26",
			"cpu":            map[string]any{"cores": 2},
			"memory":         map[string]any{"dedicated": 2048},
			"scsiHardware":   "virtio-scsi-single",
			"disks":          []any{map[string]any{"interface": "scsi0", "storage": "local-lvm", "size": 8}},
			"networkDevices": []any{map[string]any{"bridge": "vmbr0"}},
			"cloudInit": map[string]any{"storage": "local-lvm", "ipConfigs": []any{
				map[string]any{"ipv4": map[string]any{"address": a(50) + "/24", "gateway": a(1)}},
			}},
		},
		"proxmoxtalos:proxmox:DownloadFile": {
			"node": "pve1", "storage": "local", "fileName": "suite.iso",
			"url": "https://images.example.com/lablinux/qemu-guest-agent/lablinux-1.0.iso",
		},
		"proxmoxtalos:talos:MachineSecrets":         {"talosVersion": "v1.12.5"},
		"proxmoxtalos:talos:ImageFactorySchematic":  {"talosVersion": "v1.12.5", "factoryUrl": l.FactoryURL(), "extensions": []any{"siderolabs/qemu-guest-agent"}},
		"proxmoxtalos:talos:ConfigurationApply":     {"node": a(60), "clientConfiguration": clientConfig(), "machineConfiguration": "${other.machineSecrets}"},
		"proxmoxtalos:talos:Bootstrap":              {"node": a(60), "clientConfiguration": clientConfig()},
		"proxmoxtalos:talos:Kubeconfig":             {"node": a(60), "clientConfiguration": clientConfig()},
		"proxmoxtalos:talos:ClusterHealth":          {"controlPlanes": []any{a(60)}, "clientConfiguration": clientConfig()},
		"proxmoxtalos:talos:ControlPlaneComponents": {"node": a(60), "clientConfiguration": clientConfig(), "kubernetesVersion": "v1.34.1"},
	}

	const tc, vm, df = "", "proxmoxtalos:proxmox:VirtualMachine", "proxmoxtalos:proxmox:DownloadFile"
	const secrets, schematic, apply = "proxmoxtalos:talos:MachineSecrets", "proxmoxtalos:talos:ImageFactorySchematic", "proxmoxtalos:talos:ConfigurationApply"
	const boot, kube, health, cpc = "proxmoxtalos:talos:Bootstrap", "proxmoxtalos:talos:Kubeconfig", "proxmoxtalos:talos:ClusterHealth", "proxmoxtalos:talos:ControlPlaneComponents"
	to := func(path string, v any) func(map[string]any) { return func(m map[string]any) { set(m, path, v) } }
	both := func(edits ...func(map[string]any)) func(map[string]any) {
		return func(m map[string]any) {
			for _, e := range edits {
				e(m)
			}
		}
	}

	cases := []badCase{
		// TalosCluster: counts and sizes
		{"zero control planes", tc, to("controlPlane.count", 0), "controlPlane.count", []string{"0 control planes", "leave count out"}},
		{"even control planes", tc, to("controlPlane.count", 2), "controlPlane.count", []string{"use 1, 3 or 5"}},
		{"negative workers", tc, to("workerPools[0].count", -1), "workerPools[0].count", []string{"cannot be negative"}},
		{"zero disk size", tc, to("workerPools[0].size", map[string]any{"diskSize": 0}), "workerPools[0].size.diskSize", []string{"leave diskSize out"}},
		{"memory in GiB", tc, to("controlPlane.size", map[string]any{"memory": 8}), "controlPlane.size.memory", []string{"the unit is MiB"}},
		{"one core", tc, to("controlPlane.size", map[string]any{"cores": 1}), "controlPlane.size.cores", []string{"minimum of 2"}},
		{"tiny disk", tc, to("workerPools[0].size", map[string]any{"diskSize": 5}), "workerPools[0].size.diskSize", []string{"10 GiB"}},
		{"zero data disk", tc, to("workerPools[0].dataDisks", []any{map[string]any{"size": 0}}), "workerPools[0].dataDisks[0].size", []string{"0 GiB"}},
		{"count and nodes disagree", tc, both(to("workerPools[0].count", 2), to("workerPools[0].nodes", []any{map[string]any{"address": a(30)}})), "workerPools[0].count", []string{"set only one of count and nodes"}},
		// names
		{"cluster name not a DNS label", tc, to("clusterName", "My_Cluster"), "clusterName", []string{"DNS label"}},
		{"pool without a name", tc, to("workerPools[0].name", ""), "workerPools[0].name", []string{"needs a name"}},
		{"pool named like the control planes", tc, to("workerPools[0].name", "cp"), "workerPools[0].name", []string{"reserved", "choose another pool name"}},
		{"duplicate pool names", tc, to("workerPools", []any{map[string]any{"name": "w", "count": 1}, map[string]any{"name": "w", "count": 1}}), "workerPools[1].name", []string{"must be unique"}},
		{"node patch for a node that does not exist", tc, to("nodePatches", map[string]any{"suite-workers-9": []any{"machine: {}"}}), "nodePatches", []string{"no node of that name", "nodes are"}},
		// versions
		{"Talos release line", tc, to("talosVersion", "1.12"), "talosVersion", []string{"v1.12."}},
		{"Talos version that is not one", tc, to("talosVersion", "latest"), "talosVersion", []string{"latest"}},
		{"Kubernetes too old", tc, to("kubernetesVersion", "v1.29.0"), "kubernetesVersion", []string{"too old"}},
		{"Kubernetes release line", tc, to("kubernetesVersion", "v1.34"), "kubernetesVersion", []string{"v1.34."}},
		// hosts
		{"no hosts", tc, to("hosts", []any{}), "hosts", []string{"list at least one node"}},
		{"host that does not exist", tc, to("hosts[1].node", "pve9"), "hosts[1].node", []string{"pve9"}},
		{"host listed twice", tc, to("hosts[1].node", "pve1"), "hosts[1].node", []string{"list each Proxmox node once"}},
		{"disk storage that does not exist", tc, to("hosts[0].diskStorage", "fast-nvme"), "hosts[0].diskStorage", []string{"fast-nvme"}},
		{"ISO storage without ISO content", tc, to("hosts[0].isoStorage", "local-lvm"), "hosts[0].isoStorage", []string{"iso"}},
		// network
		{"subnet not a CIDR", tc, to("network.subnet", "10.0.0.0"), "network.subnet", []string{"10.0.0.0"}},
		{"gateway outside the subnet", tc, to("network.gateway", "10.99.0.1"), "network.gateway", []string{"not a usable address", "inside the subnet"}},
		{"range reversed", tc, to("network.addressRange", map[string]any{"start": a(40), "end": a(10)}), "network.addressRange", []string{a(40)}},
		{"VIP inside the range", tc, to("vip", a(20)), "vip", []string{"inside the address range"}},
		{"VIP outside the subnet", tc, to("vip", "10.99.0.5"), "vip", []string{"outside the node subnet"}},
		{"secret bridge", tc, to("network.bridge", map[string]any{"fn::secret": "vmbr0"}), "network.bridge", []string{"is a secret", "as a plain value"}},
		// VMIDs and templates on the Proxmox cluster (container 150 is a stranger's)
		{"pinned control plane VMID taken", tc, to("controlPlane", map[string]any{"nodes": []any{map[string]any{"vmId": 150}}}), "controlPlane.nodes[0].vmId", []string{"VMID 150 is taken by container", "leave vmId out"}},
		{"pinned worker VMID taken", tc, to("workerPools[0]", map[string]any{"name": "workers", "nodes": []any{map[string]any{"vmId": 150}}}), "workerPools[0].nodes[0].vmId", []string{"VMID 150 is taken", "give a free VMID"}},
		{"template that does not exist", tc, to("image.template", map[string]any{"vmId": 9999}), "image.template.vmId", []string{"VMID 9999 does not exist", "leave image.template out"}},
		{"host template that does not exist", tc, both(to("image.template", map[string]any{"vmId": 9999}), to("hosts[1].templateVmId", 9998)), "hosts[1].templateVmId", []string{"VMID 9998 does not exist"}},
		{"template that is a container", tc, to("image.template", map[string]any{"vmId": 150}), "image.template.vmId", []string{"is a container", "cloned from a VM template"}},
		{"VIP is the gateway", tc, to("vip", a(1)), "vip", []string{a(1)}},
		{"bad DNS server", tc, to("network.dnsServers", []any{"dns.example.com"}), "network.dnsServers[0]", []string{"dns.example.com"}},
		{"VLAN out of range", tc, to("network.vlan", 5000), "network.vlan", []string{"5000"}},
		{"MTU too small", tc, to("network.mtu", 500), "network.mtu", []string{"576-65520"}},
		{"two nodes on one address", tc, both(to("workerPools[0].count", nil), to("workerPools[0].nodes", []any{map[string]any{"address": a(30)}, map[string]any{"address": a(30)}})), "workerPools[0].nodes[1].address", []string{"already the address"}},
		{"node address outside the subnet", tc, both(to("workerPools[0].count", nil), to("workerPools[0].nodes", []any{map[string]any{"address": "10.99.0.7"}})), "workerPools[0].nodes[0].address", []string{"inside the subnet"}},
		// image and VM options
		{"metal platform", tc, to("image.platform", "metal"), "image.platform", []string{`use "nocloud"`}},
		{"extension with a typo", tc, to("image.extensions", []any{"siderolabs/qemu-guest-agnet"}), "image.extensions", []string{"siderolabs/qemu-guest-agent"}},
		{"kernel args in one string", tc, to("image.kernelArgs", []any{"console=ttyS0 net.ifnames=0"}), "image.kernelArgs", []string{"its own list entry"}},
		{"kvm64 CPU", tc, to("vm.cpuType", "kvm64"), "vm.cpuType", []string{"x86-64-v2"}},
		{"a tag of the component's", tc, to("vm.tags", []any{"worker"}), "vm.tags[0]", []string{"choose another tag"}},
		{"IDE disks", tc, to("diskInterface", "ide"), "diskInterface", []string{"scsi"}},
		{"install disk not a path", tc, to("installDisk", "sda"), "installDisk", []string{"not a device path"}},
		{"http endpoint", tc, to("endpoint", "http://k8s.local:6443"), "endpoint", []string{"https"}},
		// add-ons and config
		{"broken patch", tc, to("patches", []any{"machine: [this is not"}), "patches[0]", []string{"YAML"}},
		{"mirror host with a scheme", tc, to("registryMirrors", map[string]any{"https://docker.io": map[string]any{"endpoints": []any{"https://m.local"}}}), `registryMirrors["https://docker.io"]`, []string{"registry host"}},
		{"mirror password without user", tc, to("registryMirrors", map[string]any{"docker.io": map[string]any{"endpoints": []any{"https://m.local"}, "auth": map[string]any{"password": "x1"}}}), `registryMirrors["docker.io"].auth.username`, []string{"give both"}},
		{"GitOps without install manifests", tc, to("gitOps", map[string]any{"tool": "flux", "installManifests": []any{}, "repository": map[string]any{"url": "https://g/r"}}), "gitOps.installManifests", nil},
		{"GitOps repository that is not a URL", tc, to("gitOps", map[string]any{"tool": "flux", "installManifests": []any{"https://x/y.yaml"}, "repository": map[string]any{"url": "my repo"}}), "gitOps.repository.url", []string{"not a git repository URL"}},
		{"MTU too large", tc, to("network.mtu", 70000), "network.mtu", []string{"576-65520"}},
		{"secondary VLAN out of range", tc, to("network.secondary", map[string]any{"bridge": "vmbr1", "vlan": 5000}), "network.secondary.vlan", []string{"1-4094"}},
		{"bridge that does not exist", tc, to("network.bridge", "vmbr9"), "network.bridge", []string{"vmbr9", "its bridges are"}},
		{"ISO storage without ISO content (cluster-wide)", tc, to("image.isoStorage", "local-lvm"), "image.isoStorage", []string{"does not hold ISO images"}},
		{"an input from another resource", tc, func(m map[string]any) { m["vip"] = "${other.id}" }, "vip", []string{"not known yet", "plain value"}},

		// VirtualMachine
		{"VM on a node that does not exist", vm, to("node", "pve9"), "node", []string{"pve1"}},
		{"VM memory zero", vm, to("memory.dedicated", 0), "memory.dedicated", nil},
		{"VM memory in GiB", vm, to("memory.dedicated", 4), "memory.dedicated", []string{"MiB"}},
		{"VM zero cores", vm, to("cpu.cores", 0), "cpu.cores", nil},
		{"VM disk size zero", vm, to("disks[0].size", 0), "disks[0].size", nil},
		{"VM disk on a storage that does not exist", vm, to("disks[0].storage", "fast-nvme"), "disks[0].storage", []string{"fast-nvme"}},
		{"VM disk interface misspelt", vm, to("disks[0].interface", "scsi"), "disks[0].interface", []string{"scsi0"}},
		{"VM bridge that does not exist", vm, to("networkDevices[0].bridge", "vmbr9"), "networkDevices[0].bridge", []string{"vmbr9"}},
		{"VM VLAN out of range", vm, to("networkDevices[0].vlanId", 5000), "networkDevices[0].vlanId", nil},
		{"VM address without prefix", vm, to("cloudInit.ipConfigs[0].ipv4.address", a(50)), "cloudInit.ipConfigs[0].ipv4.address", []string{"/24"}},
		{"VM id too small", vm, to("vmId", 42), "vmId", []string{"100"}},
		{"VM tag with a space", vm, to("tags", []any{"my tag"}), "tags[0]", nil},
		{"VM ISO that does not exist", vm, to("iso", "local:iso/nothing.iso"), "iso", []string{"nothing.iso"}},
		{"VM clone of a VM that does not exist", vm, to("clone", map[string]any{"vmId": 4242}), "clone.vmId", []string{"4242"}},
		{"VM name not a DNS name", vm, to("name", "my vm"), "name", nil},

		// DownloadFile
		{"download to a node that does not exist", df, to("node", "pve9"), "node", []string{"pve1"}},
		{"download to a storage without ISOs", df, to("storage", "local-lvm"), "storage", []string{"content"}},
		{"download with an ftp URL", df, to("url", "ftp://x/y.iso"), "url", []string{"http or https"}},
		{"download with a wrong extension", df, to("fileName", "talos.raw"), "fileName", []string{".iso"}},
		{"download checksum without algorithm", df, to("checksum", "abcd"), "checksumAlgorithm", nil},
		{"download short sha256", df, both(to("checksum", "abcd"), to("checksumAlgorithm", "sha256")), "checksum", []string{"64 hex"}},

		// Talos resources
		{"secrets for a version that is not one", secrets, to("talosVersion", "latest"), "talosVersion", nil},
		{"secrets renewal window longer than the lifetime", secrets, both(to("clientCertificateLifetimeHours", 24), to("clientCertificateRenewalWindowHours", 48)), "clientCertificateRenewalWindowHours", nil},
		{"schematic extension with a typo", schematic, to("extensions", []any{"siderolabs/qemu-guest-agnet"}), "extensions", []string{"siderolabs/qemu-guest-agent"}},
		{"schematic metal-only platform typo", schematic, to("platform", "no-cloud"), "platform", []string{"nocloud"}},
		{"apply to a bad port", apply, to("node", a(60)+":99999"), "node", []string{"port"}},
		{"apply mode unknown", apply, to("applyMode", "now"), "applyMode", nil},
		{"apply try timeout not a duration", apply, to("tryTimeout", "5 minutes"), "tryTimeout", []string{"Go duration"}},
		{"apply for a release line", apply, to("talosVersion", "1.12"), "talosVersion", []string{"v1.12."}},
		{"bootstrap on a bad port", boot, to("node", a(60)+":99999"), "node", []string{"port"}},
		{"kubeconfig endpoint over plain http", kube, to("kubernetesEndpoint", "http://"+a(60)+":6443"), "kubernetesEndpoint", []string{"https"}},
		{"health without control planes", health, to("controlPlanes", []any{}), "controlPlanes", nil},
		{"components for a release line", cpc, to("kubernetesVersion", "v1.34"), "kubernetesVersion", []string{"v1.34."}},
	}

	p := harness.NewYAMLProject(t, env, "badsuite", badSuiteProgram(t, vm, bases[vm]))
	p.ConfigureLab(t, l.conn)
	volumes := func() []string {
		var out []string
		for _, n := range l.Nodes() {
			for _, st := range l.Storages(n) {
				for _, v := range l.PVE.Volumes(n, st) {
					out = append(out, n+"/"+v.VolID)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	before := volumes()
	examine := regexp.MustCompile(`Examine values at '[^']*'`)
	failed := 0
	for _, c := range cases {
		typ := c.typ
		if typ == "" {
			typ = "proxmoxtalos:TalosCluster"
		}
		props := deepCopy(bases[typ]).(map[string]any)
		c.edit(props)
		program := badSuiteProgram(t, typ, props)
		if strings.Contains(program, "${other.") {
			program = withOtherResource(program)
		}
		p.WriteProgram(t, "badsuite", program)
		r := p.Preview(t)
		out := squeeze(r.Output())
		var missing []string
		if r.ExitCode == 0 {
			missing = append(missing, "a failure")
		}
		// The path as the message names it: "<path>: ..." for the
		// component, "Examine values at 'bad.<path>'" or the path in
		// the reason for a resource.
		hasPath := strings.Contains(out, c.path+":") || strings.Contains(out, "'bad."+c.path+"'") ||
			strings.Contains(out, c.path+" ") || slices.ContainsFunc(examine.FindAllString(out, -1), func(s string) bool { return strings.Contains(s, c.path) })
		if !hasPath {
			missing = append(missing, "the input path "+c.path)
		}
		for _, w := range c.words {
			if !strings.Contains(out, squeeze(w)) {
				missing = append(missing, fmt.Sprintf("%q", w))
			}
		}
		if len(missing) > 0 {
			failed++
			t.Errorf("%s: the preview lacks %s:\n%s", c.name, strings.Join(missing, ", "), r.Output())
		}
		if vms := l.VMs(); len(vms) > 0 {
			t.Fatalf("%s: the preview created VMs: %+v", c.name, vms)
		}
	}
	if after := volumes(); !slices.Equal(before, after) {
		t.Errorf("the previews changed the storages: before %v, after %v", before, after)
	}
	if len(cases) < 60 {
		t.Errorf("%d cases, the issue asks for at least 60", len(cases))
	}
	t.Logf("%d cases, %d failed", len(cases), failed)
}

// clientConfig is a syntactically valid client configuration for resources
// whose inputs are checked before any node is asked.
func clientConfig() map[string]any {
	return map[string]any{"caCertificate": "ca", "clientCertificate": "cert", "clientKey": "key"}
}
