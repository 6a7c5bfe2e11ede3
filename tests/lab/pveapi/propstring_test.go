package pveapi

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProperty(t *testing.T) {
	t.Parallel()
	m := method(t, "POST", "/nodes/{node}/qemu")
	cases := []struct {
		key, value string
		want       map[string]string
		wantErr    string
	}{
		{"net0", "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=on", map[string]string{"model": "virtio", "macaddr": "BC:24:11:AA:BB:CC", "bridge": "vmbr0", "firewall": "1"}, ""},
		{"net0", "model=e1000,macaddr=BC:24:11:AA:BB:CC", map[string]string{"model": "e1000", "macaddr": "BC:24:11:AA:BB:CC"}, ""},
		{"net0", "virtio,virtio", nil, "duplicate key in comma-separated list property: model"},
		{"net0", "virtio=BC:24:11:AA:BB:CC,macaddr=BC:24:11:AA:BB:CD", nil, "duplicate key in comma-separated list property: macaddr"},
		{"net0", "virtio,bridge=", nil, "missing key in comma-separated list property"},
		{"scsi0", "local-lvm:vm-100-disk-0,size=32G,ssd=1", map[string]string{"file": "local-lvm:vm-100-disk-0", "size": "32G", "ssd": "1"}, ""},
		{"scsi0", "file=local-lvm:vm-100-disk-0,volume=local-lvm:x", nil, "key 'file' is already defined (via alias)"},
		{"scsi0", "local-lvm:8,size=12Q", nil, "scsi0.size: invalid format - value does not look like a valid disk size: 12Q"},
		{"ide2", "local-lvm:cloudinit,media=cdrom", map[string]string{"file": "local-lvm:cloudinit", "media": "cdrom"}, ""},
	}
	for _, tc := range cases {
		got, err := m.ParseProperty(tc.key, tc.value)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s=%q: error %v, want %q", tc.key, tc.value, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s=%q: %v", tc.key, tc.value, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s=%q: got %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
}

// TestPrintPropertyString checks print_property_string's order: default
// key (combined with its key alias), required keys, then the rest sorted.
func TestPrintPropertyString(t *testing.T) {
	t.Parallel()
	m := method(t, "POST", "/nodes/{node}/qemu")
	cases := []struct {
		key  string
		in   map[string]string
		want string
	}{
		{"net0", map[string]string{"model": "virtio", "macaddr": "BC:24:11:AA:BB:CC", "tag": "10", "bridge": "vmbr0"}, "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,tag=10"},
		{"net0", map[string]string{"model": "e1000", "bridge": "vmbr1"}, "e1000,bridge=vmbr1"},
		{"scsi0", map[string]string{"file": "local-lvm:vm-100-disk-0", "size": "34359738368", "iothread": "1"}, "local-lvm:vm-100-disk-0,iothread=1,size=32G"},
		{"scsi0", map[string]string{"file": "local-lvm:vm-100-disk-0", "size": "1536M"}, "local-lvm:vm-100-disk-0,size=1536M"},
		{"agent", map[string]string{"enabled": "1", "fstrim_cloned_disks": "1"}, "1,fstrim_cloned_disks=1"},
	}
	for _, tc := range cases {
		if got := PrintPropertyString(m.Param(tc.key).Props, tc.in); got != tc.want {
			t.Errorf("%s %v: got %q, want %q", tc.key, tc.in, got, tc.want)
		}
	}
}

func TestSizes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"32G": 32 << 30, "512M": 512 << 20, "1.5G": 3 << 29, "4096": 4096, "1T": 1 << 40, "10GiB": 10 << 30} {
		if got, ok := ParseSize(in); !ok || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "G", "-1G", "1X", "1.G"} {
		if _, ok := ParseSize(bad); ok {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	for in, want := range map[int64]string{32 << 30: "32G", 1536 << 20: "1536M", 4 << 20: "4M", 1000: "1000", 2 << 40: "2T", 128 << 10: "128K"} {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckFormatLists(t *testing.T) {
	t.Parallel()
	cases := []struct {
		format, value, wantErr string
	}{
		{"pve-tag-list", "a;b c,d", ""},
		{"pve-tag-list", "a;-b", "invalid characters in tag"},
		{"address-list", "1.1.1.1 dns.example.com ::1", ""},
		{"address-list", "1.1.1.1 not_a_host!", "value does not look like a valid address: not_a_host!"},
		{"pve-configid-list", "cores,memory", ""},
		{"pve-configid-list", "cores,1x", "invalid configuration ID '1x'"},
		{"pve-storage-content-list", "iso,images", ""},
		{"pve-storage-content-list", "iso,disks", "invalid content type 'disks'"},
	}
	for _, tc := range cases {
		err := CheckFormat(tc.format, tc.value, "x")
		if tc.wantErr == "" && err != nil {
			t.Errorf("%s %q: %v", tc.format, tc.value, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s %q: error %v, want %q", tc.format, tc.value, err, tc.wantErr)
		}
	}
}

// TestEveryServedFormatIsKnown lists the formats the served parameters use
// that the lab does not check; such parameters are refused, so this list
// must stay small and deliberate.
func TestEveryServedFormatIsKnown(t *testing.T) {
	t.Parallel()
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]bool{}
	var walk func(ps map[string]*Param)
	walk = func(ps map[string]*Param) {
		for _, p := range ps {
			if p.Props != nil {
				walk(p.Props)
			}
			if p.Format == "" {
				continue
			}
			name := strings.TrimSuffix(strings.TrimSuffix(p.Format, "-list"), "-opt")
			if _, ok := codeFormats[name]; ok {
				continue
			}
			if props, ok := namedFormats[name]; ok {
				walk(props)
				continue
			}
			refused[p.Format] = true
		}
	}
	for _, m := range s.Methods {
		walk(m.Params)
	}
	want := map[string]bool{
		"pve-qm-hostpci": true, "pve-qm-rng": true, "pve-qemu-sev-fmt": true, "pve-qemu-tdx-fmt": true,
		"pve-qm-ide": true, "pve-cpuset": true, "storage-pair-list": true,
	}
	if !reflect.DeepEqual(refused, want) {
		t.Fatalf("formats the lab refuses: %v, want %v (implement new ones in formats.go or add them here on purpose)", refused, want)
	}
}
