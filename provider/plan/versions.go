package plan

import (
	"fmt"

	"github.com/blang/semver/v4"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// DefaultTalosVersion is the Talos version a new cluster runs
// (talosconfig.DefaultTalosVersion).
var DefaultTalosVersion = talosconfig.DefaultTalosVersion

// resolveVersions picks the Talos and Kubernetes versions and checks them
// with talosconfig's rules (machinery's support matrix). A version the spec
// leaves empty keeps what the existing nodes run, so upgrading the provider
// (and with it the defaults) never upgrades a running cluster by itself.
func (b *builder) resolveVersions() {
	s := &b.spec
	prevTalos, prevK8s := b.prevVersions()

	if s.TalosVersion != "" {
		if _, err := talosconfig.ParseRelease(s.TalosVersion); err != nil {
			b.probs.add("talosVersion", "%v", err)
			return
		}
	}
	if s.KubernetesVersion != "" {
		if _, err := talosconfig.ParseRelease(s.KubernetesVersion); err != nil {
			b.probs.add("kubernetesVersion", "%v", err)
			return
		}
	}
	talos := orDefault(s.TalosVersion, orDefault(prevTalos, DefaultTalosVersion))
	tv, err := talosconfig.CheckTalosVersion(talos)
	if err != nil {
		b.probs.add("talosVersion", "%v", err)
		return
	}
	b.plan.Cluster.TalosVersion = talosconfig.TalosTag(tv)

	k8s := orDefault(s.KubernetesVersion, prevK8s)
	if k8s == "" {
		if k8s, err = talosconfig.DefaultKubernetesVersion(b.plan.Cluster.TalosVersion); err != nil {
			b.probs.add("talosVersion", "%v", err)
			return
		}
	}
	kv, err := talosconfig.ParseVersion(k8s)
	if err != nil {
		b.probs.add("kubernetesVersion", "%v", err)
		return
	}
	b.plan.Cluster.KubernetesVersion = "v" + kv.String()
	if err := talosconfig.CheckKubernetesVersion(b.plan.Cluster.TalosVersion, b.plan.Cluster.KubernetesVersion); err != nil {
		field := "kubernetesVersion"
		if s.KubernetesVersion == "" {
			field = "talosVersion"
		}
		b.probs.add(field, "%v", err)
	}
}

// prevVersions returns the versions the previous control planes were planned
// with (the first one found).
func (b *builder) prevVersions() (talos, k8s string) {
	if b.prev == nil {
		return "", ""
	}
	for _, n := range b.prev.Nodes {
		if n.Role == RoleControlPlane && n.TalosVersion != "" {
			return n.TalosVersion, n.KubernetesVersion
		}
	}
	return "", ""
}

// checkKubernetesUpgrade enforces the Kubernetes version skew policy for
// the control plane: one minor version at a time, never backwards
// (kubernetes.io/releases/version-skew-policy: "kube-apiserver ... must be
// upgraded one minor version at a time"; downgrades are not supported).
func checkKubernetesUpgrade(from, to string) error {
	f, err1 := semver.ParseTolerant(from)
	t, err2 := semver.ParseTolerant(to)
	if err1 != nil || err2 != nil {
		return nil // the versions themselves are checked elsewhere
	}
	switch {
	case t.LT(f):
		return fmt.Errorf("Kubernetes cannot be downgraded (%s to %s): keep kubernetesVersion at %s or newer", from, to, from)
	case t.Major == f.Major && t.Minor > f.Minor+1:
		return fmt.Errorf("Kubernetes upgrades go one minor version at a time (%s to %s): upgrade to v%d.%d first", from, to, f.Major, f.Minor+1)
	}
	return nil
}
