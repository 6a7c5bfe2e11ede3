package plan

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// observe renders a plan's VMs the way Proxmox shows them once created:
// the VM ids it allocated, tags sorted, MACs as written.
func observe(p *Plan, firstID int) []ObservedVM {
	var out []ObservedVM
	for i, n := range p.Nodes {
		vm := n.VM
		id := vm.VMID
		if id == 0 {
			id = firstID + i
		}
		tags := slices.Clone(vm.Tags)
		slices.Sort(tags)
		disks := append([]Disk{vm.OSDisk}, vm.DataDisks...)
		for i := range disks {
			disks[i].Device, disks[i].Volume = "", ""
		}
		out = append(out, ObservedVM{
			VMID: id, Host: vm.Host, Name: vm.Name, Tags: tags,
			Cores: vm.Cores, Sockets: vm.Sockets, CPUType: vm.CPUType, MemoryMiB: vm.MemoryMiB,
			Disks: disks, ISOStorage: vm.Boot.ISOStorage, ISOVolume: ISOVolumeID(vm.Boot.ISOStorage, vm.Boot.ISOFile), NICs: slices.Clone(vm.NICs),
			DNSServers: slices.Clone(vm.DNSServers), SearchDomain: vm.SearchDomain, Status: "running",
			OnBoot: vm.OnBoot, Agent: vm.Agent,
		})
	}
	return out
}

func TestRebuildRoundTrip(t *testing.T) {
	spec := baseSpec()
	spec.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 50, Volume: "data"}, {SizeGiB: 10}}
	p := mustCompute(t, spec, roomy(), nil)
	st, warnings := Rebuild("lab", observe(p, 100))
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	if len(st.Nodes) != 5 {
		t.Fatalf("rebuilt %d nodes, want 5", len(st.Nodes))
	}
	want := p.State()
	for i, got := range st.Nodes {
		w := want.Nodes[i]
		// What Proxmox cannot tell stays empty.
		if got.Config != nil {
			t.Errorf("%s: config fingerprints rebuilt from nothing: %v", got.Name, got.Config)
		}
		// Nor are the versions: the component asks the nodes.
		if got.TalosVersion != "" || got.KubernetesVersion != "" || got.Image != "" {
			t.Errorf("%s: versions rebuilt from nothing: %q %q %q", got.Name, got.TalosVersion, got.KubernetesVersion, got.Image)
		}
		w.Config, w.VMID = nil, 100+i
		w.TalosVersion, w.KubernetesVersion, w.Image = "", "", ""
		if got.Name != w.Name || got.Role != w.Role || got.Pool != w.Pool || got.Ordinal != w.Ordinal ||
			got.Host != w.Host || got.VMID != w.VMID || got.Address != w.Address || got.MAC != w.MAC ||
			got.Cores != w.Cores || got.MemoryMiB != w.MemoryMiB || got.CPUType != w.CPUType ||
			got.DiskInterface != w.DiskInterface || got.DiskGiB != w.DiskGiB || got.DiskStorage != w.DiskStorage || !slices.Equal(got.DataDisks, w.DataDisks) ||
			got.Boot != w.Boot || got.ISO != w.ISO || got.NICs != w.NICs || got.CloudInit != w.CloudInit ||
			got.TalosVersion != w.TalosVersion || got.KubernetesVersion != w.KubernetesVersion || got.Image != w.Image ||
			got.Tags != w.Tags || !reflect.DeepEqual(got.OnBoot, w.OnBoot) || !reflect.DeepEqual(got.Agent, w.Agent) {
			t.Errorf("node %d rebuilt as\n %+v\nwant\n %+v", i, got, w)
		}
	}

	// Planning again from the rebuilt state changes nothing.
	again := mustCompute(t, spec, roomy(), st)
	if s := Compare(st, again.State()); len(s.Nodes) != 0 || s.String() != "no node changes" {
		t.Errorf("second plan from the rebuilt state: %s %+v", s, s.Nodes)
	}
	for _, n := range again.Nodes {
		if !n.Existing || n.VM.VMIDPinned || n.VM.VMID == 0 {
			t.Errorf("%s: existing=%v vmId=%d pinned=%v; want existing with its VM id, not pinned", n.Name, n.Existing, n.VM.VMID, n.VM.VMIDPinned)
		}
	}
}

func TestRebuildThenScaleOutKeepsAddresses(t *testing.T) {
	spec := baseSpec()
	p := mustCompute(t, spec, roomy(), nil)
	st, _ := Rebuild("lab", observe(p, 100))
	spec.WorkerPools[0].Count = 3
	spec.ControlPlane.Size.MemoryMiB = ptr(8192)
	next := mustCompute(t, spec, roomy(), st)
	for _, old := range p.Nodes {
		if got := node(t, next, old.Name).VM.NICs[0].Address; got != old.VM.NICs[0].Address {
			t.Errorf("%s renumbered %s -> %s", old.Name, old.VM.NICs[0].Address, got)
		}
	}
	s := Compare(st, next.State())
	if got := s.Names(ActionAdd); !slices.Equal(got, []string{"lab-workers-3"}) {
		t.Errorf("added %v", got)
	}
	if got := s.Names(ActionReboot); !slices.Equal(got, []string{"lab-cp-1", "lab-cp-2", "lab-cp-3"}) {
		t.Errorf("rebooted %v (%s)", got, s)
	}
}

// A Talos upgrade keeps the ISO each existing node booted from (its
// installed system needs no other, and Proxmox refuses to start a VM whose
// ISO is gone); new nodes boot the new version's ISO, downloaded next to it.
func TestUpgradeKeepsTheNodesISOs(t *testing.T) {
	spec := baseSpec()
	spec.TalosVersion = "v1.12.5"
	p := mustCompute(t, spec, roomy(), nil)
	st, _ := Rebuild("lab", observe(p, 100))
	oldFile := p.Nodes[0].VM.Boot.ISOFile
	oldURL := p.Cluster.Image.ISO

	spec.TalosVersion = "v1.12.6"
	spec.WorkerPools[0].Count = 3
	next := mustCompute(t, spec, roomy(), st)
	newFile := ISOFileName("v1.12.6", next.Cluster.Image.SchematicID, "nocloud")
	for _, n := range next.Nodes {
		want := oldFile
		if n.Name == "lab-workers-3" {
			want = newFile
		}
		if n.VM.Boot.ISOFile != want || n.VM.Boot.ISOStorage != "local" {
			t.Errorf("%s boots %s, want %s", n.Name, n.VM.Boot.ISOFile, want)
		}
	}
	host := node(t, next, "lab-workers-3").VM.Host
	var got []string
	for _, d := range next.ISOs {
		got = append(got, d.Host+" "+d.FileName)
		if d.FileName == oldFile && (d.URL != oldURL || !d.URLKnown || d.Current) {
			t.Errorf("kept ISO %+v, want the URL it was downloaded from (%s)", d, oldURL)
		}
		if d.FileName == newFile && (d.URL != next.Cluster.Image.ISO || !d.Current) {
			t.Errorf("new ISO %+v", d)
		}
	}
	want := []string{"pve1 " + oldFile, "pve2 " + oldFile, "pve3 " + oldFile}
	for i, w := range want {
		if strings.HasPrefix(w, host+" ") {
			want = slices.Insert(want, i, host+" "+newFile)
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("isos\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Another schematic: the kept ISO's full schematic ID is not in its
	// name, so its URL is not known (the download keeps its own).
	spec.WorkerPools[0].Count = 2
	spec.Image.Extensions = []string{"qemu-guest-agent", "iscsi-tools"}
	next = mustCompute(t, spec, roomy(), st)
	for _, d := range next.ISOs {
		if d.FileName == oldFile && (d.URLKnown || !strings.Contains(d.URL, "/"+oldFile[len("talos-v1.12.5-"):len("talos-v1.12.5-")+12]+"/")) {
			t.Errorf("kept ISO of another schematic: %+v", d)
		}
	}
	if len(next.ISOs) != 3 {
		t.Errorf("isos %v: want only the kept ones (no new node)", next.ISOs)
	}
}

func TestRebuildIgnoresAndWarns(t *testing.T) {
	p := mustCompute(t, baseSpec(), roomy(), nil)
	vms := observe(p, 100)
	other := vms[0]
	other.VMID, other.Tags = 300, []string{"cluster-other", "controlplane", "proxmoxtalos"}
	template := vms[1]
	template.VMID, template.Template = 301, true
	noRole := vms[1]
	noRole.VMID, noRole.Name, noRole.Tags = 302, "lab-x", []string{"cluster-lab", "proxmoxtalos"}
	noAddress := vms[1]
	noAddress.VMID, noAddress.Name = 303, "lab-y"
	noAddress.NICs = []NICConfig{{Bridge: "vmbr0", MAC: "BC:24:11:00:00:01"}}
	dup := vms[3]
	dup.VMID = 304
	unmanaged := vms[2]
	unmanaged.VMID, unmanaged.Tags = 305, []string{"cluster-lab", "controlplane"}

	st, warnings := Rebuild("lab", append(vms, other, template, noRole, noAddress, dup, unmanaged))
	if len(st.Nodes) != 5 {
		t.Errorf("rebuilt %d nodes, want the 5 of the cluster", len(st.Nodes))
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{
		`VM 302 (lab-x) on pve`, `neither the "controlplane" nor the "worker" tag`,
		`VM 303 (lab-y)`, `no static cloud-init address on net0`,
		`VMs 103 and 304 are both node lab-workers-1`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	if len(warnings) != 3 {
		t.Errorf("%d warnings, want 3:\n%s", len(warnings), joined)
	}
}

// Proxmox lists VMs by VMID, which says nothing about the nodes: the
// rebuilt state is in canonical order whatever the VMIDs.
func TestRebuildOrdersNodesCanonically(t *testing.T) {
	p := mustCompute(t, baseSpec(), roomy(), nil)
	vms := observe(p, 100)
	for i := range vms {
		vms[i].VMID = 200 - i // reversed
	}
	st, _ := Rebuild("lab", vms)
	var got []string
	for _, n := range st.Nodes {
		got = append(got, n.Name)
	}
	if want := nodeNames(p); !slices.Equal(got, want) {
		t.Errorf("rebuilt order %v, want %v", got, want)
	}
}

func TestOrdinalOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{"lab-workers-3", 3}, {"lab-workers-03", 0}, {"lab-workers-0", 0}, {"lab-workers-x", 0},
		{"db1", 0}, {"lab-cp-1", 0},
	} {
		if got := ordinalOf("lab", "workers", tc.name); got != tc.want {
			t.Errorf("ordinalOf(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSplitDisks(t *testing.T) {
	os, data := splitDisks([]Disk{{Interface: "scsi10"}, {Interface: "scsi2"}, {Interface: "scsi0"}, {Interface: "virtio1"}})
	if os == nil || os.Interface != "scsi0" {
		t.Fatalf("os disk %+v", os)
	}
	var got []string
	for _, d := range data {
		got = append(got, d.Interface)
	}
	if !slices.Equal(got, []string{"scsi2", "scsi10", "virtio1"}) {
		t.Errorf("data disks %v", got)
	}
	if os, _ := splitDisks([]Disk{{Interface: "ide0"}}); os != nil {
		t.Errorf("ide0 taken as the OS disk")
	}
}

func TestISOFileNames(t *testing.T) {
	const id = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	for _, v := range []string{"v1.12.5", "v1.13.0-alpha.1"} {
		name := ISOFileName(v, id, "nocloud")
		gotV, short, platform, ok := ParseISOFileName(name)
		if !ok || gotV != v || short != id[:12] || platform != "nocloud" {
			t.Errorf("%s read back as %q %q %q %v", name, gotV, short, platform, ok)
		}
	}
	for _, other := range []string{"talos.iso", "talos-v1.12.5-nocloud-amd64.iso", "talos-v1.12.5-CE4C980550DD-nocloud-amd64.iso"} {
		if _, _, _, ok := ParseISOFileName(other); ok {
			t.Errorf("%s read as one of ours", other)
		}
	}
}
