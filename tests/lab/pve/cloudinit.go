package pve

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pveapi"
)

// Cloud-init follows qemu-server src/PVE/QemuServer/Cloudinit.pm (NoCloud
// format): user-data, network-config version 1, and meta-data whose
// instance-id is the SHA-1 of both. The lab host's resolv.conf is empty, so
// without nameserver/searchdomain the nameserver entry is empty, as the
// real code prints it.

// ciKeys are the config keys whose change makes the cloud-init drive stale
// (cloudinit_pending_properties: the cloud-init options, name, and NICs).
func isCloudInitKey(k string) bool {
	switch k {
	case "ciuser", "cipassword", "citype", "ciupgrade", "cicustom", "searchdomain", "nameserver", "sshkeys", "name":
		return true
	}
	p, _, ok := keyIndex(k)
	return ok && (p == "ipconfig" || p == "net")
}

func ciSnapshot(conf map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range conf {
		if isCloudInitKey(k) {
			out[k] = v
		}
	}
	return out
}

// generateCloudInitLocked writes the VM's cloud-init drive from its config
// (generate_cloudinit_config), if it has one.
func (s *Server) generateCloudInitLocked(v *vm) error {
	if s.cloudInitDrive(v.conf) == "" {
		v.cloudinit, v.ciSnapshot = nil, nil
		return nil
	}
	if f := v.conf["citype"]; f != "" && f != "nocloud" {
		return fmt.Errorf("lab: cloud-init format '%s' is not implemented (only nocloud)\n", f)
	}
	if _, ok := v.conf["cicustom"]; ok {
		return fmt.Errorf("lab: cicustom snippets are not implemented\n")
	}
	ci := &CloudInit{IPConfigs: map[string]IPConfig{}, User: v.conf["ciuser"]}
	ci.Hostname, _ = hostnameFQDN(v.conf, v.vmid)
	ci.SearchDomain = v.conf["searchdomain"]
	ci.Nameservers = strings.Fields(v.conf["nameserver"])
	if k, ok := v.conf["sshkeys"]; ok {
		ci.SSHKeys, _ = url.PathUnescape(k)
	}
	for i := 0; i < 32; i++ {
		raw, ok := v.conf["ipconfig"+itoa(i)]
		if _, hasNIC := v.conf["net"+itoa(i)]; !ok || !hasNIC {
			continue
		}
		m, err := pveapi.ParseNamed("pve-qm-ipconfig", raw)
		if err != nil {
			continue
		}
		ci.IPConfigs["net"+itoa(i)] = IPConfig{IP: m["ip"], Gateway: m["gw"], IP6: m["ip6"], Gateway6: m["gw6"]}
	}
	ci.UserData = s.cloudInitUserData(v.conf, v.vmid, false)
	network, err := s.cloudInitNetwork(v.conf)
	if err != nil {
		return err
	}
	ci.NetworkData = network
	ci.MetaData = nocloudMetadata(ci.UserData, ci.NetworkData)
	v.cloudinit = ci
	v.ciSnapshot = ciSnapshot(v.conf)
	return nil
}

// hostnameFQDN is get_hostname_fqdn.
func hostnameFQDN(conf map[string]string, vmid int) (string, string) {
	host := conf["name"]
	if host == "" {
		host = fmt.Sprintf("VM%d", vmid)
	}
	if strings.Contains(host, ".") {
		return strings.SplitN(host, ".", 2)[0], host
	}
	if sd := conf["searchdomain"]; sd != "" {
		return host, host + "." + sd
	}
	return host, host
}

// cloudInitUserData is cloudinit_userdata.
func (s *Server) cloudInitUserData(conf map[string]string, vmid int, mask bool) string {
	host, fqdn := hostnameFQDN(conf, vmid)
	var b strings.Builder
	fmt.Fprintf(&b, "#cloud-config\nhostname: %s\nmanage_etc_hosts: true\nfqdn: %s\n", host, fqdn)
	user, hasUser := conf["ciuser"]
	if hasUser {
		fmt.Fprintf(&b, "user: %s\n", user)
		if user == "root" {
			b.WriteString("disable_root: False\n")
		}
	}
	if pw, ok := conf["cipassword"]; ok {
		if mask {
			pw = "**********"
		}
		fmt.Fprintf(&b, "password: %s\n", pw)
	}
	if k, ok := conf["sshkeys"]; ok {
		keys, _ := url.PathUnescape(k)
		b.WriteString("ssh_authorized_keys:\n")
		for _, line := range strings.Split(keys, "\n") {
			if strings.TrimSpace(line) != "" {
				fmt.Fprintf(&b, "  - %s\n", strings.TrimRight(line, "\r"))
			}
		}
	}
	b.WriteString("chpasswd:\n  expire: False\n")
	if !hasUser || user != "root" {
		b.WriteString("users:\n  - default\n")
	}
	if u, ok := conf["ciupgrade"]; !ok || u == "1" {
		b.WriteString("package_upgrade: true\n")
	}
	return b.String()
}

// cloudInitNetwork is nocloud_network (network-config version 1).
func (s *Server) cloudInitNetwork(conf map[string]string) (string, error) {
	var b strings.Builder
	b.WriteString("version: 1\nconfig:\n")
	var ifaces []string
	for k := range conf {
		if p, _, ok := keyIndex(k); ok && p == "net" {
			ifaces = append(ifaces, k)
		}
	}
	sort.Strings(ifaces) // Perl's sort: lexical, net10 before net2
	const i = "    "
	for _, iface := range ifaces {
		id := strings.TrimPrefix(iface, "net")
		raw, ok := conf["ipconfig"+id]
		if !ok {
			continue
		}
		net, err := s.confM.ParseProperty(iface, conf[iface])
		if err != nil {
			return "", err
		}
		ipc, err := pveapi.ParseNamed("pve-qm-ipconfig", raw)
		if err != nil {
			return "", err
		}
		mac := strings.ToLower(net["macaddr"])
		if mac == "" {
			return "", fmt.Errorf("network interface '%s' has no mac address\n", iface)
		}
		fmt.Fprintf(&b, "%s- type: physical\n%s  name: eth%s\n%s  mac_address: '%s'\n%s  subnets:\n", i, i, id, i, mac, i)
		j := i + "  "
		if ip, ok := ipc["ip"]; ok {
			if ip == "dhcp" {
				fmt.Fprintf(&b, "%s- type: dhcp4\n", j)
			} else {
				addr, mask := splitIP4(ip)
				fmt.Fprintf(&b, "%s- type: static\n%s  address: '%s'\n%s  netmask: '%s'\n", j, j, addr, j, mask)
				if gw, ok := ipc["gw"]; ok {
					fmt.Fprintf(&b, "%s  gateway: '%s'\n", j, gw)
				}
			}
		}
		if ip, ok := ipc["ip6"]; ok {
			switch ip {
			case "dhcp":
				fmt.Fprintf(&b, "%s- type: dhcp6\n", j)
			case "auto":
				fmt.Fprintf(&b, "%s- type: ipv6_slaac\n", j)
			default:
				fmt.Fprintf(&b, "%s- type: static6\n%s  address: '%s'\n", j, j, ip)
				if gw, ok := ipc["gw6"]; ok {
					fmt.Fprintf(&b, "%s  gateway: '%s'\n", j, gw)
				}
			}
		}
	}
	fmt.Fprintf(&b, "%s- type: nameserver\n", i)
	if ns := strings.Fields(conf["nameserver"]); len(ns) > 0 {
		fmt.Fprintf(&b, "%s  address:\n", i)
		for _, n := range ns {
			fmt.Fprintf(&b, "%s  - '%s'\n", i, n)
		}
	}
	if sd := strings.Fields(conf["searchdomain"]); len(sd) > 0 {
		fmt.Fprintf(&b, "%s  search:\n", i)
		for _, d := range sd {
			fmt.Fprintf(&b, "%s  - '%s'\n", i, d)
		}
	}
	return b.String(), nil
}

// splitIP4 is split_ip4: "192.0.2.10/24" -> ("192.0.2.10", "255.255.255.0").
func splitIP4(cidr string) (string, string) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return cidr, ""
	}
	bits := p.Bits()
	var mask [4]byte
	for k := 0; k < bits; k++ {
		mask[k/8] |= 0x80 >> (k % 8)
	}
	return p.Addr().String(), fmt.Sprintf("%d.%d.%d.%d", mask[0], mask[1], mask[2], mask[3])
}

func nocloudMetadata(user, network string) string {
	sum := sha1.Sum([]byte(user + network))
	return "instance-id: " + hex.EncodeToString(sum[:]) + "\n"
}
