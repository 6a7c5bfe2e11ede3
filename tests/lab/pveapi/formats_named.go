package pveapi

import (
	"fmt"
	"regexp"
)

// namedFormats are property-string formats that apidata.js names instead of
// spelling out. Their keys are transcribed from qemu-server:
// src/PVE/QemuServer/Network.pm ($ipconfig_fmt), src/PVE/QemuServer.pm
// ($smbios1_fmt, $boot_fmt, $watchdog_fmt, $cicustom_fmt) and
// src/PVE/QemuServer/CPUConfig.pm ($cpu_fmt).
var namedFormats = map[string]map[string]*Param{
	"pve-qm-ipconfig": {
		"ip":  {Type: "string", Format: "pve-ipv4-config", Optional: true},
		"gw":  {Type: "string", Format: "ipv4", Optional: true, Requires: "ip"},
		"ip6": {Type: "string", Format: "pve-ipv6-config", Optional: true},
		"gw6": {Type: "string", Format: "ipv6", Optional: true, Requires: "ip6"},
	},
	"pve-qm-smbios1": {
		"uuid":         {Type: "string", Optional: true, Pattern: `[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}`},
		"version":      base64Key(),
		"serial":       base64Key(),
		"manufacturer": base64Key(),
		"product":      base64Key(),
		"sku":          base64Key(),
		"family":       base64Key(),
		"base64":       {Type: "boolean", Optional: true},
	},
	"pve-qm-boot": {
		"legacy": {Type: "string", Optional: true, DefaultKey: true, Pattern: `[acdn]{1,4}`},
		"order":  {Type: "string", Optional: true, Format: "pve-qm-bootdev-list"},
	},
	"pve-qm-watchdog": {
		"model":  {Type: "string", Optional: true, DefaultKey: true, Enum: []string{"i6300esb", "ib700"}},
		"action": {Type: "string", Optional: true, Enum: []string{"reset", "shutdown", "poweroff", "pause", "debug", "none"}},
	},
	"pve-qm-cicustom": {
		"meta":    {Type: "string", Optional: true, Format: "pve-volume-id"},
		"network": {Type: "string", Optional: true, Format: "pve-volume-id"},
		"user":    {Type: "string", Optional: true, Format: "pve-volume-id"},
		"vendor":  {Type: "string", Optional: true, Format: "pve-volume-id"},
	},
	"pve-vm-cpu-conf": {
		"cputype":         {Type: "string", Optional: true, DefaultKey: true},
		"reported-model":  {Type: "string", Optional: true, Enum: qemuCPUModels},
		"hidden":          {Type: "boolean", Optional: true},
		"hv-vendor-id":    {Type: "string", Optional: true, Pattern: `[a-zA-Z0-9]{1,12}`},
		"flags":           {Type: "string", Optional: true, Pattern: `[+-]?[a-zA-Z0-9\-_\.]+(;[+-]?[a-zA-Z0-9\-_\.]+)*`},
		"guest-phys-bits": {Type: "integer", Optional: true, Minimum: float(32), Maximum: float(64)},
		"phys-bits":       {Type: "string", Optional: true, Format: "pve-phys-bits"},
		"level":           {Type: "integer", Optional: true, Minimum: float(0), Maximum: float(4294967295)},
	},
}

func base64Key() *Param {
	return &Param{Type: "string", Optional: true, Pattern: `[A-Za-z0-9+\/]+={0,2}`}
}

func float(f float64) *float64 { return &f }

// qemuCPUModels are the x86_64 models QEMU ships (the list qemu-server reads
// from /usr/share/kvm/cpu-models-x86_64.json), plus host and max.
var qemuCPUModels = []string{
	"486", "athlon", "Broadwell", "Broadwell-IBRS", "Broadwell-noTSX", "Broadwell-noTSX-IBRS",
	"Cascadelake-Server", "Cascadelake-Server-noTSX", "ClearwaterForest", "Conroe", "Cooperlake",
	"core2duo", "coreduo", "Denverton", "Dhyana", "EPYC", "EPYC-Genoa", "EPYC-IBPB", "EPYC-Milan",
	"EPYC-Rome", "EPYC-Turin", "GraniteRapids", "Haswell", "Haswell-IBRS", "Haswell-noTSX",
	"Haswell-noTSX-IBRS", "host", "Icelake-Client", "Icelake-Client-noTSX", "Icelake-Server",
	"Icelake-Server-noTSX", "IvyBridge", "IvyBridge-IBRS", "KnightsMill", "kvm32", "kvm64", "max",
	"Nehalem", "Nehalem-IBRS", "Opteron_G1", "Opteron_G2", "Opteron_G3", "Opteron_G4", "Opteron_G5",
	"Penryn", "pentium", "pentium2", "pentium3", "phenom", "qemu32", "qemu64", "SandyBridge",
	"SandyBridge-IBRS", "SapphireRapids", "SierraForest", "Skylake-Client", "Skylake-Client-IBRS",
	"Skylake-Client-noTSX-IBRS", "Skylake-Server", "Skylake-Server-IBRS", "Skylake-Server-noTSX-IBRS",
	"Snowridge", "Westmere", "Westmere-IBRS", "YongFeng",
}

// builtinCPUModels are qemu-server's own models ($builtin_models_by_arch).
var builtinCPUModels = []string{"x86-64-v2", "x86-64-v2-AES", "x86-64-v3", "x86-64-v4"}

// formatValidators run after a named property string parsed cleanly, like
// the validators registered with register_format(name, fmt, validator).
var formatValidators = map[string]func(map[string]string) error{
	// CPUConfig.pm validate_vm_cpu_conf (custom models are not configured in
	// the lab, so "custom-..." fails like an unknown custom model would).
	"pve-vm-cpu-conf": func(cpu map[string]string) error {
		t := cpu["cputype"]
		if t == "" {
			return fmt.Errorf("CPU is missing cputype\n")
		}
		if regexp.MustCompile(`^custom-`).MatchString(t) {
			return fmt.Errorf("Custom cputype '%s' not found\n", t[len("custom-"):])
		}
		known := false
		for _, m := range append(append([]string{}, qemuCPUModels...), builtinCPUModels...) {
			if m == t {
				known = true
			}
		}
		if !known {
			return fmt.Errorf("Built-in cputype '%s' is not defined (missing 'custom-' prefix?)\n", t)
		}
		if _, ok := cpu["reported-model"]; ok {
			return fmt.Errorf("Property 'reported-model' not allowed in VM-specific CPU config.\n")
		}
		return nil
	},
}

// NamedFormat returns the keys of a named property-string format
// ("pve-qm-smbios1", "pve-qm-ipconfig", ...), or nil.
func NamedFormat(name string) map[string]*Param { return namedFormats[name] }
