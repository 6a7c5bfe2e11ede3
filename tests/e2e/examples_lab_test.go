package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// exampleLab is an in-process lab for one example test, at time scale 0.
type exampleLab struct {
	*lab.Lab
	Conn harness.Lab
}

// startExampleLab starts a lab with its default nodes (pve1..pve3), booting simulated Talos
// nodes in its VMs, that lives until the test ends; its log goes to the test log.
func startExampleLab(t *testing.T) *exampleLab {
	t.Helper()
	l, conn := harness.StartLab(t, lab.Options{
		TimeScale: 0,
		Logf:      func(format string, args ...any) { t.Logf("lab: "+format, args...) },
	})
	return &exampleLab{Lab: l, Conn: conn}
}

// addr is the n-th address of the lab's 127.X.Y.0/24 block.
func (l *exampleLab) addr(n int) string {
	return l.Address(byte(n)).String()
}

// volumes lists every volume on every node and storage, as node/volid.
func (l *exampleLab) volumes() []string {
	var out []string
	for _, node := range l.Nodes() {
		for _, st := range l.Storages(node) {
			for _, v := range l.PVE.Volumes(node, st) {
				out = append(out, node+"/"+v.VolID)
			}
		}
	}
	sort.Strings(out)
	return out
}

// requireEmpty fails the test when a VM or a volume is left in the lab.
func (l *exampleLab) requireEmpty(t *testing.T) {
	t.Helper()
	var left []string
	for _, vm := range l.VMs() {
		left = append(left, fmt.Sprintf("VM %d (%s on %s)", vm.VMID, vm.Name, vm.Node))
	}
	left = append(left, l.volumes()...)
	if len(left) > 0 {
		t.Errorf("the lab is not empty after destroy: %s", strings.Join(left, ", "))
	}
}
