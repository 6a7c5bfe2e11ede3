package proxmox

import (
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

func TestMemoryNeed(t *testing.T) {
	t.Parallel()
	withMem := func(mib int, change func(a *VirtualMachineArgs)) *VirtualMachineArgs {
		a := talosArgs()
		a.Memory = &VirtualMachineMemory{Dedicated: mib}
		if change != nil {
			change(&a)
		}
		return &a
	}
	cases := []struct {
		name string
		a    *VirtualMachineArgs
		old  *VirtualMachineArgs
		want int
	}{
		{"new VM", withMem(4096, nil), nil, 4096},
		{"new VM without memory: Proxmox's default, not checked", withMem(0, func(a *VirtualMachineArgs) { a.Memory = nil }), nil, 0},
		{"new VM that is not started", withMem(4096, func(a *VirtualMachineArgs) { a.Started = ptr(false) }), nil, 0},
		{"new template", withMem(4096, func(a *VirtualMachineArgs) { a.Template = ptr(true) }), nil, 0},
		{"growth", withMem(6144, nil), withMem(4096, nil), 2048},
		{"shrink", withMem(2048, nil), withMem(4096, nil), 0},
		{"memory given for the first time", withMem(4096, nil), withMem(0, func(a *VirtualMachineArgs) { a.Memory = nil }), 0},
		{"a stopped VM that is now started", withMem(4096, nil), withMem(4096, func(a *VirtualMachineArgs) { a.Started = ptr(false) }), 0},
	}
	for _, c := range cases {
		if got := memoryNeed(*c.a, c.old); got != c.want {
			t.Errorf("%s: need %d MiB, want %d", c.name, got, c.want)
		}
	}
}

func TestMemoryWarning(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	node := pve.NodeInfo{Name: "pve1", Online: true, MaxMem: 16384 * mib, Mem: 10240 * mib} // 6144 MiB free
	a := talosArgs()
	a.Memory = &VirtualMachineMemory{Dedicated: 8192}
	old := talosArgs()
	old.Memory = &VirtualMachineMemory{Dedicated: 1024}

	if w := memoryWarning(a, nil, 4096, node, 0, 0, 0); w != "" {
		t.Errorf("4096 MiB fits 6144 MiB free, got %q", w)
	}
	if w := memoryWarning(a, nil, 6144, node, 0, 0, 0); w != "" {
		t.Errorf("exactly the free memory fits, got %q", w)
	}
	w := memoryWarning(a, nil, 8192, node, 0, 0, 0)
	for _, part := range []string{"needs 8192 MiB", "node pve1 has 6144 MiB free", "16384 MiB total", "10240 MiB in use",
		"Cannot allocate memory", "another node"} {
		if !strings.Contains(w, part) {
			t.Errorf("warning %q lacks %q", w, part)
		}
	}
	// other new VMs of the program on the node count too
	w = memoryWarning(a, nil, 4096, node, 3072, 2, 0)
	if !strings.Contains(w, "2 other new VM(s) of this program will take 3072 MiB") {
		t.Errorf("warning %q does not count the program's other VMs", w)
	}
	// VMs the program started after the node's memory was read count, and
	// are named as such
	w = memoryWarning(a, nil, 4096, node, 0, 0, 3072)
	if !strings.Contains(w, "VMs this program has just started take 3072 MiB of it") {
		t.Errorf("warning %q does not count the program's started VMs", w)
	}
	w = memoryWarning(a, &old, 7168, node, 0, 0, 0)
	if !strings.Contains(w, "growing the VM from 1024 to 8192 MiB needs 7168 MiB more") {
		t.Errorf("growth warning %q", w)
	}
	// unknown node memory: nothing to say
	if w := memoryWarning(a, nil, 1<<20, pve.NodeInfo{Name: "pve1"}, 0, 0, 0); w != "" {
		t.Errorf("unknown capacity warned: %q", w)
	}
}
