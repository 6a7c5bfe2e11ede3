package plan

import (
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/labels"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// checkLabelsAndPatches checks labels, taints, patches and the explicit VM
// ids and MACs of every node.
func (b *builder) checkLabelsAndPatches() {
	cp := &b.spec.ControlPlane
	b.checkLabels("controlPlane.labels", cp.Labels)
	b.checkTaints("controlPlane.taints", cp.Taints)
	b.checkPatches("controlPlane.patches", cp.Patches)
	for i, wp := range b.spec.WorkerPools {
		f := idx("workerPools", i)
		b.checkLabels(f+".labels", wp.Labels)
		b.checkTaints(f+".taints", wp.Taints)
		b.checkPatches(f+".patches", wp.Patches)
	}
	b.checkPatches("patches", b.spec.Patches)
	b.checkPatches("workerPatches", b.spec.WorkerPatches)
	for _, name := range slices.Sorted(maps.Keys(b.spec.NodePatches)) {
		b.checkPatches("nodePatches[\""+name+"\"]", b.spec.NodePatches[name])
	}

	vmids := map[int]string{}
	macs := map[string]string{}
	for _, s := range b.slots {
		e := &s.explicit
		if !s.listed {
			continue
		}
		b.checkLabels(s.field+".labels", e.Labels)
		b.checkTaints(s.field+".taints", e.Taints)
		b.checkPatches(s.field+".patches", e.Patches)
		if e.VMID != 0 {
			if !validVMID(e.VMID) {
				b.probs.add(s.field+".vmId", "%d is not a Proxmox VM id (100-999999999)", e.VMID)
			} else if other, dup := vmids[e.VMID]; dup {
				b.probs.add(s.field+".vmId", "VM id %d is also given to %s: VM ids must be unique", e.VMID, other)
			}
			vmids[e.VMID] = s.field
		}
		if e.MAC != "" {
			mac, ok := unicastMAC(e.MAC)
			if !ok {
				b.probs.add(s.field+".mac", "%q is not a unicast MAC address like \"BC:24:11:00:00:01\"", e.MAC)
			} else if other, dup := macs[mac]; dup {
				b.probs.add(s.field+".mac", "MAC %s is also given to %s", mac, other)
			}
			macs[mac] = s.field
		}
	}
}

func (b *builder) checkLabels(field string, l map[string]string) {
	if err := labels.Validate(l); err != nil {
		b.probs.add(field, "%v", err)
	}
}

// checkTaints checks taints in Talos' form with machinery's own validator.
func (b *builder) checkTaints(field string, taints []Taint) {
	seen := map[string]bool{}
	for i, t := range taints {
		if seen[t.Key] {
			b.probs.add(idx(field, i), "taint key %q is given twice: Talos keeps one taint per key", t.Key)
		}
		seen[t.Key] = true
	}
	if err := labels.ValidateTaints(talosTaints(taints)); err != nil {
		b.probs.add(field, "%v (effects are NoSchedule, PreferNoSchedule and NoExecute)", err)
	}
}

// talosTaints converts taints to Talos' machine.nodeTaints form: key ->
// "value:Effect", or "Effect" without a value. The first taint of a key wins.
func talosTaints(taints []Taint) map[string]string {
	m := map[string]string{}
	for _, t := range taints {
		if _, dup := m[t.Key]; dup {
			continue
		}
		v := t.Effect
		if t.Value != "" {
			v = t.Value + ":" + t.Effect
		}
		m[t.Key] = v
	}
	return m
}

func (b *builder) checkPatches(field string, patches []string) {
	for i, p := range patches {
		if strings.TrimSpace(p) == "" {
			b.probs.add(idx(field, i), "the patch is empty: remove it or give a strategic merge or JSON6902 patch")
		}
	}
}

// checkDayTwo refuses changes that would break a running cluster.
func (b *builder) checkDayTwo() {
	if b.prev == nil {
		return
	}
	if b.prev.Cluster != "" && b.prev.Cluster != b.spec.Name {
		b.probs.add("clusterName", "the cluster is named %q and cannot be renamed (every node and certificate would change): create a new cluster instead", b.prev.Cluster)
		return
	}
	var prevCPs []string
	kept := false
	for _, pn := range b.prev.Nodes {
		if pn.Role != RoleControlPlane {
			continue
		}
		prevCPs = append(prevCPs, pn.Name)
		if slices.ContainsFunc(b.slots, func(s *slot) bool { return s.name == pn.Name && s.role == RoleControlPlane }) {
			kept = true
		}
	}
	switch {
	case len(prevCPs) > 0 && !kept:
		b.probs.add("controlPlane", "every existing control plane (%s) would be removed, and etcd with them: keep at least one of them while adding new ones, then remove the rest in a later update", strings.Join(prevCPs, ", "))
	case len(prevCPs) > 0 && !slices.ContainsFunc(b.slots, func(s *slot) bool { return s.name == prevCPs[0] }):
		// The component resets the first control plane without leaving
		// etcd (the last member of a destroyed cluster cannot leave).
		b.probs.add("controlPlane", "%s is the cluster's first control plane: it is the one removed last, when the cluster is destroyed, without leaving etcd, so it cannot be removed while other control planes stay; keep it and remove another one", prevCPs[0])
	}
	b.checkUpgrades()
}

// checkUpgrades checks each version step the existing nodes would take,
// with talosconfig's Talos upgrade rules (what the node itself refuses).
func (b *builder) checkUpgrades() {
	talos, k8s := b.plan.Cluster.TalosVersion, b.plan.Cluster.KubernetesVersion
	if talos == "" || k8s == "" {
		return // already reported
	}
	done := map[string]bool{}
	for _, pn := range b.prev.Nodes {
		if from := pn.TalosVersion; from != "" && from != talos && !done["t"+from] {
			done["t"+from] = true
			if err := talosconfig.CheckUpgrade(from, talos); err != nil {
				b.probs.add("talosVersion", "node %s runs Talos %s: %v", pn.Name, from, err)
			}
		}
		if from := pn.KubernetesVersion; from != "" && from != k8s && !done["k"+from] {
			done["k"+from] = true
			if err := checkKubernetesUpgrade(from, k8s); err != nil {
				b.probs.add("kubernetesVersion", "node %s runs Kubernetes %s: %v", pn.Name, from, err)
			}
		}
	}
}

// unicastMAC normalises a MAC to upper case and checks it is unicast (the
// low bit of the first octet clear), as Proxmox requires for net[n] macaddr.
func unicastMAC(s string) (string, bool) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 || hw[0]&1 == 1 {
		return "", false
	}
	return strings.ToUpper(hw.String()), true
}
