package pveapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func method(t *testing.T, verb, path string) *Method {
	t.Helper()
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	m := s.Method(verb, path)
	if m == nil {
		t.Fatalf("%s %s not in the embedded schema", verb, path)
	}
	return m
}

// TestValidateCreate checks the create-VM parameters against PVE's own
// messages (pve-common src/PVE/JSONSchema.pm).
func TestValidateCreate(t *testing.T) {
	t.Parallel()
	m := method(t, "POST", "/nodes/{node}/qemu")
	base := func(extra map[string]any) map[string]any {
		p := map[string]any{"node": "pve1", "vmid": "100"}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	cases := []struct {
		name    string
		params  map[string]any
		wantKey string
		wantMsg string // substring; "" means valid
	}{
		{"minimal", base(nil), "", ""},
		{"missing vmid", map[string]any{"node": "pve1"}, "vmid", "property is missing and it is not optional"},
		{"unknown param", base(map[string]any{"foo": "1"}), "foo", "property is not defined in schema and the schema does not allow additional properties"},
		{"integer type", base(map[string]any{"cores": "two"}), "cores", "type check ('integer') failed - got 'two'"},
		{"json number", base(map[string]any{"cores": json.Number("4")}), "", ""},
		{"json float for integer", base(map[string]any{"cores": json.Number("2.5")}), "cores", "type check ('integer') failed - got '2.5'"},
		{"minimum", base(map[string]any{"cores": "0"}), "cores", "value must have a minimum value of 1"},
		{"vmid range", base(map[string]any{"vmid": "99"}), "vmid", "invalid format - value does not look like a valid VM ID\n"},
		{"vmid maximum", base(map[string]any{"vmid": "1000000000"}), "vmid", "invalid format - value does not look like a valid VM ID"},
		{"boolean true string refused", base(map[string]any{"onboot": "true"}), "onboot", "type check ('boolean') failed - got 'true'"},
		{"boolean json true", base(map[string]any{"onboot": true}), "", ""},
		{"json bool for string", base(map[string]any{"name": true}), "name", "type check ('string') failed - got JSON::PP::Boolean"},
		{"array for string", base(map[string]any{"name": []any{"a", "b"}}), "name", "type check ('string') failed - got ARRAY"},
		{"enum", base(map[string]any{"scsihw": "fast"}), "scsihw", "value 'fast' does not have a value in the enumeration 'lsi, lsi53c810, virtio-scsi-pci, virtio-scsi-single, megasas, pvscsi'"},
		{"node name", map[string]any{"node": "pve_1", "vmid": "100"}, "node", "invalid format - value does not look like a valid node name"},
		{"storage id", base(map[string]any{"storage": "1x"}), "storage", "invalid format - storage ID '1x' contains illegal characters"},
		{"net ok", base(map[string]any{"net0": "virtio,bridge=vmbr0,firewall=1,tag=10"}), "", ""},
		{"net mac alias", base(map[string]any{"net3": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}), "", ""},
		{"net bad model", base(map[string]any{"net0": "fastnic,bridge=vmbr0"}), "net0", "invalid format - format error\nnet0.model: value 'fastnic' does not have a value in the enumeration"},
		{"net no model", base(map[string]any{"net0": "bridge=vmbr0"}), "net0", "net0.model: property is missing and it is not optional"},
		{"net bad key", base(map[string]any{"net0": "virtio,speed=10"}), "net0", "invalid format - invalid key in comma-separated list property: speed\n"},
		{"net multicast mac", base(map[string]any{"net0": "virtio=BD:24:11:00:00:01"}), "net0", "net0.macaddr: invalid format - value does not look like a valid unicast MAC address"},
		{"net duplicate key", base(map[string]any{"net0": "virtio,bridge=vmbr0,bridge=vmbr1"}), "net0", "duplicate key in comma-separated list property: bridge"},
		{"net tag range", base(map[string]any{"net0": "virtio,tag=4095"}), "net0", "net0.tag: value must have a maximum value of 4094"},
		{"net index out of range", base(map[string]any{"net32": "virtio"}), "net32", "property is not defined in schema"},
		{"net index leading zero", base(map[string]any{"net01": "virtio"}), "net01", "property is not defined in schema"},
		{"scsi new disk", base(map[string]any{"scsi0": "local-lvm:32,iothread=1,discard=on,ssd=1"}), "", ""},
		{"scsi30 ok", base(map[string]any{"scsi30": "local-lvm:1"}), "", ""},
		{"scsi31 unknown", base(map[string]any{"scsi31": "local-lvm:1"}), "scsi31", "property is not defined in schema"},
		{"virtio16 unknown", base(map[string]any{"virtio16": "local-lvm:1"}), "virtio16", "property is not defined"},
		{"ide4 unknown", base(map[string]any{"ide4": "none"}), "ide4", "property is not defined"},
		{"scsi bad cache", base(map[string]any{"scsi0": "local-lvm:8,cache=fast"}), "scsi0", "scsi0.cache: value 'fast' does not have a value in the enumeration"},
		{"scsi bad volume", base(map[string]any{"scsi0": "justaname"}), "scsi0", "scsi0.file: invalid format - unable to parse volume ID 'justaname'"},
		{"cloudinit drive", base(map[string]any{"ide2": "local-lvm:cloudinit"}), "", ""},
		{"iso cdrom", base(map[string]any{"ide2": "local:iso/talos.iso,media=cdrom"}), "", ""},
		{"efidisk", base(map[string]any{"efidisk0": "local-lvm:1,efitype=4m,pre-enrolled-keys=0"}), "", ""},
		{"efidisk bad type", base(map[string]any{"efidisk0": "local-lvm:1,efitype=8m"}), "efidisk0", "efidisk0.efitype: value '8m' does not have a value in the enumeration '2m, 4m'"},
		{"ipconfig ok", base(map[string]any{"ipconfig0": "ip=127.1.2.10/24,gw=127.1.2.1"}), "", ""},
		{"ipconfig dhcp", base(map[string]any{"ipconfig1": "ip=dhcp,ip6=auto"}), "", ""},
		{"ipconfig bad cidr", base(map[string]any{"ipconfig0": "ip=127.1.2.10"}), "ipconfig0", "ipconfig0.ip: invalid format - value does not look like a valid ipv4 network configuration"},
		{"ipconfig gw without ip", base(map[string]any{"ipconfig0": "gw=10.0.0.1"}), "ipconfig0", "ipconfig0.ip: missing property required by 'ipconfig0.gw'"},
		{"agent ok", base(map[string]any{"agent": "enabled=1,fstrim_cloned_disks=1"}), "", ""},
		{"agent bare", base(map[string]any{"agent": "1"}), "", ""},
		{"agent on", base(map[string]any{"agent": "on"}), "", ""},
		{"agent bad", base(map[string]any{"agent": "maybe"}), "agent", "agent.enabled: type check ('boolean') failed - got 'maybe'"},
		{"smbios uuid", base(map[string]any{"smbios1": "uuid=6f1c3c5e-2b7a-4c7e-9a57-1d2f0e5b4c3a"}), "", ""},
		{"smbios bad uuid", base(map[string]any{"smbios1": "uuid=nope"}), "smbios1", "smbios1.uuid: value does not match the regex pattern"},
		{"memory", base(map[string]any{"memory": "4096"}), "", ""},
		{"memory too small", base(map[string]any{"memory": "8"}), "memory", "memory.current: value must have a minimum value of 16"},
		{"cpu type", base(map[string]any{"cpu": "x86-64-v2-AES"}), "", ""},
		{"cpu unknown", base(map[string]any{"cpu": "pentium9"}), "cpu", "Built-in cputype 'pentium9' is not defined (missing 'custom-' prefix?)"},
		{"boot order", base(map[string]any{"boot": "order=scsi0;ide2;net0"}), "", ""},
		{"boot bad device", base(map[string]any{"boot": "order=scsi0;floppy0"}), "boot", "boot.order: invalid format - invalid boot device 'floppy0'"},
		{"tags", base(map[string]any{"tags": "k8s;control-plane"}), "", ""},
		{"tags bad", base(map[string]any{"tags": "a;b/c"}), "tags", "invalid format - invalid characters in tag"},
		{"machine", base(map[string]any{"machine": "q35"}), "", ""},
		{"machine bad", base(map[string]any{"machine": "q36"}), "machine", "machine.type: value does not match the regex pattern"},
		{"bios enum", base(map[string]any{"bios": "uefi"}), "bios", "value 'uefi' does not have a value in the enumeration 'seabios, ovmf'"},
		{"nameserver list", base(map[string]any{"nameserver": "1.1.1.1 8.8.8.8"}), "", ""},
		{"sshkeys urlencoded", base(map[string]any{"sshkeys": "ssh-ed25519+AAA"}), "sshkeys", "invalid format - invalid urlencoded string: ssh-ed25519+AAA"},
		{"pool id", base(map[string]any{"pool": "a b"}), "pool", "invalid format - pool name 'a b' contains invalid characters"},
		{"hostpci refused by the lab", base(map[string]any{"hostpci0": "0000:01:00.0"}), "hostpci0", "not implemented by the lab"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errs := m.Validate(tc.params)
			if tc.wantMsg == "" {
				if errs != nil {
					t.Fatalf("unexpected errors: %v", errs)
				}
				if out["node"] != tc.params["node"] {
					t.Fatalf("validated params lost node: %v", out)
				}
				return
			}
			if errs == nil {
				t.Fatalf("accepted %v, want error %q on %s", tc.params, tc.wantMsg, tc.wantKey)
			}
			if !strings.Contains(errs[tc.wantKey], tc.wantMsg) {
				t.Fatalf("errors[%s] = %q, want it to contain %q (all: %v)", tc.wantKey, errs[tc.wantKey], tc.wantMsg, errs)
			}
		})
	}
}

func TestValidateNormalises(t *testing.T) {
	t.Parallel()
	m := method(t, "POST", "/nodes/{node}/qemu")
	out, errs := m.Validate(map[string]any{"node": "pve1", "vmid": json.Number("100"), "onboot": true, "cores": json.Number("2.0"), "template": false})
	if errs != nil {
		t.Fatal(errs)
	}
	if out["vmid"] != "100" || out["onboot"] != "1" || out["cores"] != "2" || out["template"] != "0" {
		t.Fatalf("normalised: %v", out)
	}
}

func TestValidateRequires(t *testing.T) {
	t.Parallel()
	m := method(t, "POST", "/nodes/{node}/storage/{storage}/download-url")
	p := map[string]any{"node": "pve1", "storage": "local", "content": "iso", "filename": "a.iso", "url": "https://example.com/a.iso", "checksum": "abc"}
	_, errs := m.Validate(p)
	if errs["checksum-algorithm"] != "missing property required by 'checksum'" {
		t.Fatalf("errors: %v", errs)
	}
	p["url"] = "ftp://example.com/a.iso"
	p["checksum-algorithm"] = "sha256"
	_, errs = m.Validate(p)
	if errs["url"] != "value does not match the regex pattern" {
		t.Fatalf("errors: %v", errs)
	}
	p["url"] = "https://example.com/a.iso"
	p["content"] = "images"
	_, errs = m.Validate(p)
	if !strings.Contains(errs["content"], "value 'images' does not have a value in the enumeration 'iso, vztmpl, import'") {
		t.Fatalf("errors: %v", errs)
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ verb, path, template string }{
		{"GET", "/nodes/pve1/qemu/100/status/current", "/nodes/{node}/qemu/{vmid}/status/current"},
		{"POST", "/nodes/pve1/qemu/100/agent/ping", "/nodes/{node}/qemu/{vmid}/agent/ping"},
		{"POST", "/nodes/pve1/qemu/100/agent", "/nodes/{node}/qemu/{vmid}/agent"},
		{"DELETE", "/nodes/pve1/storage/local/content/local:iso/talos.iso", "/nodes/{node}/storage/{storage}/content/{volume}"},
		{"GET", "/nodes/pve1/qemu/100/nosuch", ""},
		{"PATCH", "/nodes/pve1/qemu", ""},
	}
	for _, tc := range cases {
		m, vars := s.Find(tc.verb, tc.path)
		got := ""
		if m != nil {
			got = m.Path
		}
		if got != tc.template {
			t.Errorf("Find(%s %s) = %q, want %q", tc.verb, tc.path, got, tc.template)
		}
		if tc.template == "/nodes/{node}/storage/{storage}/content/{volume}" && vars["volume"] != "local:iso/talos.iso" {
			t.Errorf("volume = %q", vars["volume"])
		}
	}
}
