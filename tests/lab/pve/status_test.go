package pve

import "testing"

// TestStatusCurrentHasPVE9Fields: status/current of a running VM carries
// what PVE 9.1's vmstatus reports: host memory, pressure stall figures,
// QEMU 10.1's machine and version, the balloon and block counters; a
// stopped VM's the configuration-derived ones.
func TestStatusCurrentHasPVE9Fields(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{Nodes: []NodeSpec{{Name: "pve1", Cores: 4}}})
	createVMs(t, c, nil, 100, 101)
	for _, kv := range [][2]string{{"balloon", "512"}, {"serial0", "socket"}, {"cores", "8"}, {"memory", "2048"}} {
		if err := s.SetVMConfig(101, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	vm, err := node.VirtualMachine(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	task, err := vm.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	_, running := apiCall(t, s, s.APIToken(), "GET", "/nodes/pve1/qemu/100/status/current", nil)
	r := running.(map[string]any)
	for _, k := range []string{"memhost", "pressurecpusome", "pressurecpufull", "pressureiosome", "pressureiofull",
		"pressurememorysome", "pressurememoryfull", "balloon", "freemem", "ballooninfo", "blockstat", "proxmox-support", "ha"} {
		if _, ok := r[k]; !ok {
			t.Errorf("running VM: no %q in %v", k, r)
		}
	}
	if r["running-qemu"] != "10.1.2" || r["running-machine"] != "pc-i440fx-10.1+pve0" || r["qmpstatus"] != "running" {
		t.Errorf("running VM: qemu %v machine %v qmpstatus %v", r["running-qemu"], r["running-machine"], r["qmpstatus"])
	}
	_, stopped := apiCall(t, s, s.APIToken(), "GET", "/nodes/pve1/qemu/101/status/current", nil)
	st := stopped.(map[string]any)
	if st["serial"] != float64(1) || st["balloon_min"] != float64(512<<20) || st["shares"] != float64(1000) ||
		st["cpus"] != float64(4) || st["memhost"] != float64(0) {
		t.Errorf("stopped VM: %v", st)
	}
	if _, ok := st["running-qemu"]; ok {
		t.Errorf("a stopped VM reports a running QEMU: %v", st)
	}
}
