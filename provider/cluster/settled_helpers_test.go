package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-go-provider/integration"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// settledCluster is a cluster that exists as its create left it: Proxmox
// shows its VMs (with their configurations, as Proxmox keeps them), its
// nodes run their configurations and the stack's state holds what the
// create stored.
type settledCluster struct {
	inv     *fakeInventory
	create  *recorder
	running runningConfigs
	state   map[string]any
	// onlyLayer: Component.onlyLayer
	onlyLayer string
}

func newSettledCluster(t *testing.T, inputs map[string]any) *settledCluster {
	t.Helper()
	inv, create := existingCluster(t, inputs)
	byName := map[string]registration{}
	for _, reg := range create.byType("VirtualMachine") {
		byName[reg.name] = reg
	}
	for i := range inv.vms {
		inv.vms[i].Config = pveConfigOf(byName[inv.vms[i].Name])
	}
	return &settledCluster{inv: inv, create: create, running: appliedConfigs(create), state: lastStackOf(t, create)}
}

// construct runs Construct on the cluster with inputs (a preview when
// dryRun).
func (s *settledCluster) construct(t *testing.T, dryRun bool, inputs map[string]any) (*recorder, p.ConstructResponse, error) {
	t.Helper()
	return constructWith(t, &Component{
		inventory:   func(context.Context) (Inventory, error) { return s.inv, nil },
		readConfig:  s.running.read,
		readMembers: s.running.members,
		extensions:  labFactoryExtensions(t),
		stack:       func(*pulumi.Context) (map[string]any, error) { return s.state, nil },
		offline:     func() bool { return false },
		onlyLayer:   s.onlyLayer,
	}, dryRun, inputs)
}

// lastStackOf is the stack's state after the update that registered what
// rec holds, as readStack returns it: each child's outputs, those the
// providers compute as they would (a node's configuration digest, its
// version and installer image).
func lastStackOf(t *testing.T, rec *recorder) map[string]any {
	t.Helper()
	state := map[string]any{}
	for _, reg := range rec.regs {
		outs := reg.outputs.AsMap()
		switch reg.typ {
		case "VirtualMachine":
			outs["status"] = property.New("running")
			outs["node"] = reg.inputs.Get("node")
		case "ConfigurationApply":
			cfg := reg.inputs.Get("machineConfiguration").AsString()
			digest, err := talosapi.ConfigDigest([]byte(cfg))
			must(t, err)
			image, err := talosapi.ConfigInstallImage([]byte(cfg))
			must(t, err)
			v, _ := talosapi.ImageVersion(image)
			outs["configDigest"], outs["installedImage"], outs["runningVersion"] = property.New(digest), property.New(image), property.New(v)
			outs["appliedMode"] = property.New("install") // a required output
			delete(outs, "clientConfiguration")           // not in its state (talos.StateCopies)
		case "ControlPlaneComponents":
			outs["outcome"] = property.New("current") // its create ran to the end
		}
		pkg := map[bool]string{true: "proxmox", false: "talos"}[reg.typ == "VirtualMachine" || reg.typ == "DownloadFile"]
		urn := "urn:pulumi:test::proj::" + tokenComponent + "$proxmoxtalos:" + pkg + ":" + reg.typ + "::" + reg.name
		state[urn] = map[string]any{"type": "proxmoxtalos:" + pkg + ":" + reg.typ, "outputs": plainValue(property.New(property.NewMap(outs)))}
	}
	return state
}

// pveConfigOf is a VM's configuration as Proxmox shows it once the
// VirtualMachine resource created it with reg's inputs (the qemu-server
// config keys and property strings provider/proxmox reads back).
func pveConfigOf(reg registration) map[string]string {
	in := reg.inputs
	vmid := int(reg.outputs.Get("vmId").AsNumber())
	num := func(v property.Value) string { return fmt.Sprint(int(v.AsNumber())) }
	flag := func(v property.Value) string { return map[bool]string{true: "1", false: "0"}[v.IsBool() && v.AsBool()] }
	cpu, mem := in.Get("cpu").AsMap(), in.Get("memory").AsMap()
	var tags []string
	for _, tag := range in.Get("tags").AsArray().AsSlice() {
		tags = append(tags, strings.ToLower(tag.AsString()))
	}
	slices.Sort(tags)
	c := map[string]string{
		"name": in.Get("name").AsString(), "description": in.Get("description").AsString(), "tags": strings.Join(tags, ";"),
		"ostype": in.Get("osType").AsString(), "cores": num(cpu.Get("cores")), "sockets": num(cpu.Get("sockets")),
		"cpu": cpu.Get("type").AsString(), "memory": num(mem.Get("dedicated")), "balloon": num(mem.Get("floating")),
		"onboot": flag(in.Get("onBoot")), "agent": flag(in.Get("agent").AsMap().Get("enabled")),
		"smbios1": "uuid=" + reg.outputs.Get("smbiosUuid").AsString(),
	}
	if v := in.Get("scsiHardware"); v.IsString() {
		c["scsihw"] = v.AsString()
	}
	for i, d := range in.Get("disks").AsArray().AsSlice() {
		dm := d.AsMap()
		opts := ""
		if dm.Get("discard").IsBool() && dm.Get("discard").AsBool() {
			opts += "discard=on,"
		}
		if dm.Get("iothread").IsBool() && dm.Get("iothread").AsBool() {
			opts += "iothread=1,"
		}
		size := fmt.Sprintf("size=%sG", num(dm.Get("size")))
		if dm.Get("ssd").IsBool() && dm.Get("ssd").AsBool() {
			size += ",ssd=1"
		}
		c[dm.Get("interface").AsString()] = fmt.Sprintf("%s:vm-%d-disk-%d,%s%s", dm.Get("storage").AsString(), vmid, i, opts, size)
	}
	if iso := in.Get("iso"); iso.IsString() {
		c["ide2"] = iso.AsString() + ",media=cdrom"
	}
	ci := in.Get("cloudInit").AsMap()
	c["ide0"] = fmt.Sprintf("%s:vm-%d-cloudinit,media=cdrom", ci.Get("storage").AsString(), vmid)
	for i, ip := range ci.Get("ipConfigs").AsArray().AsSlice() {
		v4 := ip.AsMap().Get("ipv4").AsMap()
		s := "ip=" + v4.Get("address").AsString()
		if gw := v4.Get("gateway"); gw.IsString() {
			s += ",gw=" + gw.AsString()
		}
		c[fmt.Sprintf("ipconfig%d", i)] = s
	}
	if dns := ci.Get("dns"); dns.IsMap() {
		var servers []string
		for _, s := range dns.AsMap().Get("servers").AsArray().AsSlice() {
			servers = append(servers, s.AsString())
		}
		if len(servers) > 0 {
			c["nameserver"] = strings.Join(servers, " ")
		}
		if d := dns.AsMap().Get("domain"); d.IsString() {
			c["searchdomain"] = d.AsString()
		}
	}
	for i, n := range in.Get("networkDevices").AsArray().AsSlice() {
		nm := n.AsMap()
		s := fmt.Sprintf("%s=%s,bridge=%s", nm.Get("model").AsString(), nm.Get("macAddress").AsString(), nm.Get("bridge").AsString())
		if v := nm.Get("vlanId"); v.IsNumber() {
			s += ",tag=" + num(v)
		}
		if v := nm.Get("mtu"); v.IsNumber() {
			s += ",mtu=" + num(v)
		}
		c[fmt.Sprintf("net%d", i)] = s
	}
	return c
}

// applySteps is the stack's state after the engine ran the ConfigurationApply
// steps of rec, an update, on state: each apply's registration checked
// against its last inputs (oldInputs, by registration key) and diffed
// against its stored outputs by the provider, as the engine calls it
// (StateCopies included). An apply whose Diff reports a change is updated,
// its outputs those of rec's registration (lastStackOf); the others keep
// their outputs (a Same step: pulumi pkg v3.274.1 resource/deploy/step.go
// SameStep.Apply). It returns the keys of the updated applies.
func applySteps(t *testing.T, rec *recorder, state map[string]any, oldInputs map[string]property.Map) (map[string]any, []string) {
	t.Helper()
	prov, err := infer.NewProviderBuilder().WithResources(framework.Resource(&talos.ConfigurationApply{})).Build()
	must(t, err)
	s, err := integration.NewServer(t.Context(), "proxmoxtalos", semver.MustParse("0.1.0"), integration.WithProvider(talos.StateCopies().Wrap(prov)))
	must(t, err)
	next, registered := maps.Clone(state), lastStackOf(t, rec)
	var updated []string
	for _, reg := range rec.byType("ConfigurationApply") {
		urn := "urn:pulumi:test::proj::" + tokenComponent + "$" + string(tokenConfigurationApply) + "::" + reg.name
		stored, ok := state[urn].(map[string]any)
		if !ok {
			t.Fatalf("no state for %s", urn)
		}
		outs := presource.FromResourcePropertyMap(presource.NewPropertyMapFromMap(stored["outputs"].(map[string]any)))
		old := oldInputs[reg.key()]
		checked, err := s.Check(p.CheckRequest{Urn: presource.URN(urn), State: old, Inputs: reg.inputs})
		if err != nil || len(checked.Failures) > 0 {
			t.Fatalf("Check of %s: %v %v", reg.key(), checked.Failures, err)
		}
		d, err := s.Diff(p.DiffRequest{ID: reg.name + "-id", Urn: presource.URN(urn), State: outs, OldInputs: old, Inputs: checked.Inputs})
		must(t, err)
		if d.HasChanges {
			next[urn] = registered[urn]
			updated = append(updated, reg.key())
		}
	}
	return next, updated
}
