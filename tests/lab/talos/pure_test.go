package talos

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

func TestLinuxDevices(t *testing.T) {
	t.Parallel()

	devs, err := linuxDevices([]Disk{{Name: "scsi1"}, {Name: "virtio0"}, {Name: "sata0"}, {Name: "scsi0"}, {Name: "virtio1"}})
	if err != nil {
		t.Fatal(err)
	}

	got := map[string]string{}
	for _, d := range devs {
		got[d.Name] = d.DevName
	}

	want := map[string]string{"virtio0": "vda", "virtio1": "vdb", "scsi0": "sda", "scsi1": "sdb", "sata0": "sdc"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s -> %s, want %s", k, got[k], v)
		}
	}

	if _, err := linuxDevices([]Disk{{Name: "efidisk0"}}); err == nil {
		t.Error("efidisk0 is not a data disk interface")
	}

	if driveLetters(26) != "aa" || driveLetters(0) != "a" {
		t.Errorf("driveLetters: %s %s", driveLetters(26), driveLetters(0))
	}
}

func TestChooseBoot(t *testing.T) {
	t.Parallel()

	installed := formatDiskContent("7", Image{Version: "v1.12.5", Platform: "nocloud", Schematic: qgaID})
	diskImage := "https://factory.talos.dev/image/" + qgaID + "/v1.12.5/nocloud-amd64.raw.xz"

	tests := []struct {
		name string
		m    Machine
		kind bootKind
		why  string
	}{
		{"blank disk falls through to ISO", Machine{Disks: []Disk{{Name: "scsi0"}}, CDROM: isoURL, BootOrder: []string{"scsi0", "ide2"}}, bootISO, ""},
		{"installed disk boots", Machine{Disks: []Disk{{Name: "scsi0", Content: installed}}, CDROM: isoURL, BootOrder: []string{"scsi0", "ide2"}}, bootInstalled, ""},
		{"ISO first wins over installed disk", Machine{Disks: []Disk{{Name: "scsi0", Content: installed}}, CDROM: isoURL, BootOrder: []string{"ide2", "scsi0"}}, bootISO, ""},
		{"imported disk image boots", Machine{Disks: []Disk{{Name: "virtio0", SourceURL: diskImage}}, BootOrder: []string{"virtio0"}}, bootDiskImage, ""},
		{"wiped disk image does not boot", Machine{Disks: []Disk{{Name: "virtio0", SourceURL: diskImage, Content: wipedContent}}, BootOrder: []string{"virtio0"}}, bootNothing, "wiped"},
		{"non-Talos ISO", Machine{CDROM: "https://releases.ubuntu.com/24.04/ubuntu-24.04-live-server-amd64.iso", BootOrder: []string{"ide2"}}, bootNothing, "not a Talos ISO"},
		{"empty drive and no PXE", Machine{BootOrder: []string{"ide2", "net0"}}, bootNothing, "no PXE server"},
		{"default order: disks then CD-ROM", Machine{Disks: []Disk{{Name: "scsi0"}}, CDROM: isoURL}, bootISO, ""},
	}

	for _, tt := range tests {
		got := chooseBoot(tt.m)
		if got.kind != tt.kind || !strings.Contains(got.why, tt.why) {
			t.Errorf("%s: kind %v why %q, want kind %v why ~%q", tt.name, got.kind, got.why, tt.kind, tt.why)
		}
	}
}

func TestNodeAddress(t *testing.T) {
	t.Parallel()

	base := Machine{NICs: []NIC{{Name: "net0"}}, CloudInit: &CloudInit{Interfaces: []IPConfig{{Address: netip.MustParsePrefix("127.5.5.5/24")}}}}

	if a, why := nodeAddress(base, PlatformNocloud); a != netip.MustParseAddr("127.5.5.5") || why != "" {
		t.Fatalf("nocloud static = %v %q", a, why)
	}

	if a, why := nodeAddress(base, PlatformMetal); a.IsValid() || !strings.Contains(why, "DHCP") {
		t.Fatalf("metal = %v %q", a, why)
	}

	dhcp := cloneMachine(base)
	dhcp.CloudInit.Interfaces[0] = IPConfig{DHCP: true}

	if a, why := nodeAddress(dhcp, PlatformNocloud); a.IsValid() || !strings.Contains(why, "DHCP") {
		t.Fatalf("dhcp = %v %q", a, why)
	}

	noCI := cloneMachine(base)
	noCI.CloudInit = nil

	if a, _ := nodeAddress(noCI, PlatformNocloud); a.IsValid() {
		t.Fatal("no cloud-init drive: no address")
	}
}

// TestEtcdQuorumRule: the quorum record's rule, read from the snapshot of
// a real cluster (etcd decides membership; the pre-upgrade check asks the
// members, TestRealEtcdLeaveAndRemove).
func TestEtcdQuorumRule(t *testing.T) {
	t.Parallel()

	c := &etcdCluster{members: []*etcdMember{
		{id: 1, started: true, running: true},
		{id: 2, started: true, running: false, learner: true},
	}}

	// A learner does not vote: 1 of 1 voting members runs.
	if !c.hasQuorum() {
		t.Fatal("the only voting member runs: quorum")
	}

	c.members[1].learner, c.members[0].running = false, false

	if c.hasQuorum() {
		t.Fatal("0 of 2 running is no quorum")
	}
}

func TestCanApplyImmediate(t *testing.T) {
	t.Parallel()

	in := clusterInput(t, netip.MustParseAddr("127.0.0.9"))
	base := configBytes(t, in, mtype.TypeControlPlane)

	cur, err := configloader.NewFromBytes(base)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		patch  func([]byte) []byte
		reboot bool
	}{
		{"same config", func(b []byte) []byte { return b }, false},
		{"node label", func(b []byte) []byte { return withLabel(b, "x: y") }, false},
		{"kubelet image", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), "kubelet:v1.35.2", "kubelet:v1.35.3", 1))
		}, false},
		{"install image", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), ":v1.12.5", ":v1.12.6", 1))
		}, false},
		{"machine env", withEnv, true},
		{"machine type", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), "persist: true", "persist: false", 1))
		}, true},
		{"extra document", func(b []byte) []byte {
			return append(b, []byte("---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 127.0.0.10\nlink: ens18\n")...)
		}, false},
	}

	for _, tt := range tests {
		next, err := configloader.NewFromBytes(tt.patch(base))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}

		err = canApplyImmediate(cur, next)
		if (err != nil) != tt.reboot {
			t.Errorf("%s: canApplyImmediate = %v, want reboot %v", tt.name, err, tt.reboot)
		}
	}
}
