package cluster

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// configEffect says what applying next does to a node running current:
// nothing, a live update, or a reboot (Talos' own rule, talosconfig
// ClassifyChange), with the reason for the summary. version is the Talos
// version that applies it: one that AppliesWithoutReboot updates the node
// in place, and a change that needed a reboot waits for the next one. A
// Talos upgrade is reported by the plan already.
func configEffect(current, next, version string) (plan.Action, string, error) {
	// The same text: nothing to apply, whatever it parses to (an online
	// current was parsed when it was read; an offline one is the state's,
	// validated by Check when it was applied). Answered without encoding
	// either text (issue 14: a no-op preview asks this of every node).
	if current == "" || current == next {
		return plan.ActionNone, "", nil
	}
	d1, err1 := talosapi.ConfigDigest([]byte(current))
	d2, err2 := talosapi.ConfigDigest([]byte(next))
	if err1 == nil && err2 == nil && d1 == d2 {
		return plan.ActionNone, "", nil
	}
	ch, err := talosconfig.ClassifyChange(current, next)
	if err != nil {
		return plan.ActionNone, "", err
	}
	if len(ch.Changed) == 0 {
		return plan.ActionNone, "", nil
	}
	if ch.Upgrade {
		return plan.ActionUpgrade, "new installer image", nil
	}
	if ch.Reboot && talosconfig.AppliesWithoutReboot(version) {
		return plan.ActionUpdate, fmt.Sprintf("%s at the next reboot: Talos %s applies without one",
			strings.Join(ch.RebootPaths, ", "), version), nil
	}
	if ch.Reboot {
		return plan.ActionReboot, strings.Join(ch.RebootPaths, ", "), nil
	}
	return plan.ActionUpdate, fmt.Sprintf("%d configuration paths", len(ch.Changed)), nil
}

// summary is the component's summary output. For an existing cluster it
// adds what the machine configuration changes do to each node, learned by
// comparing the configuration each node runs (read before planning) with
// the one it is given; the plan alone cannot know, as a state rebuilt from
// Proxmox holds no configuration inputs.
func (f *fanout) summary() pulumi.StringOutput {
	log := func(s string) {
		_ = f.ctx.Log.Info("cluster "+f.plan.Cluster.Name+": "+s, &pulumi.LogArgs{Resource: f.comp})
	}
	var existing []*plan.Node
	for i := range f.plan.Nodes {
		if f.plan.Nodes[i].Existing {
			existing = append(existing, &f.plan.Nodes[i])
		}
	}
	if len(existing) == 0 {
		log(f.base.String())
		return pulumi.String(f.base.String()).ToStringOutput()
	}
	out := f.configs.ApplyT(func(configs map[string]string) string {
		want := versions{talos: f.plan.Cluster.TalosVersion, kubernetes: f.plan.Cluster.KubernetesVersion}
		s := refine(f.base, existing, configs, want, f.readings, func(w string) {
			_ = f.ctx.Log.Warn(w, &pulumi.LogArgs{Resource: f.comp})
		})
		log(s.String())
		// Compared inside this apply: the configurations hold the real
		// Proxmox CCM token secret, as the nodes' do.
		if note, err := manifestSyncNote(f.plan, f.readings, configs); err != nil {
			_ = f.ctx.Log.Warn("cluster "+f.plan.Cluster.Name+": the sync of the bootstrap manifests is not previewed: "+
				scrubText(err.Error(), f.sensitive), &pulumi.LogArgs{Resource: f.comp})
		} else if note != "" {
			_ = f.ctx.Log.Info(scrubText(note, f.sensitive), &pulumi.LogArgs{Resource: f.comp})
		}
		return s.String()
	}).(pulumi.StringOutput)
	return pulumi.Unsecret(out).(pulumi.StringOutput)
}

// versions are what the plan wants the nodes to run.
type versions struct{ talos, kubernetes string }

// refine marks in the summary what the update does to each node, from
// what it runs (read before planning): its configuration change, and an
// upgrade when it runs another Talos version than planned. The versions
// come from the nodes (the VMs carry none), so after a failed rollout the
// summary still lists the nodes left to upgrade. A node that did not answer
// was warned about when it was read.
func refine(s plan.Summary, nodes []*plan.Node, configs map[string]string, want versions, readings map[string]nodeReading, warn func(string)) plan.Summary {
	for _, n := range nodes {
		r, ok := readings[n.Name]
		if !ok || r.err != nil {
			continue
		}
		// Applied after any upgrade: by the planned version.
		action, reason, err := configEffect(r.running.Config, configs[n.Name], cmp.Or(want.talos, r.running.TalosVersion))
		if err != nil {
			warn(fmt.Sprintf("node %s: what the new configuration changes on it could not be told (%s); the preview of its ConfigurationApply says", n.Name, firstLine(err.Error())))
		}
		if action != plan.ActionNone {
			s.Mark(n.Name, n.Role, action, reason)
		}
		if v := r.running.TalosVersion; v != "" && !sameVersion(v, want.talos) {
			s.Mark(n.Name, n.Role, plan.ActionUpgrade, "Talos "+v+" → "+want.talos)
			if s.TalosUpgrade == "" {
				s.TalosUpgrade = v + " → " + want.talos
			}
		}
		if k := kubeletVersion(r.running.Config); k != "" && !sameVersion(k, want.kubernetes) && s.KubernetesUpgrade == "" {
			s.KubernetesUpgrade = k + " → " + want.kubernetes
		}
	}
	return s
}

// kubeletVersion is the Kubernetes version of a configuration's kubelet
// image tag, or "".
func kubeletVersion(config string) string {
	v, _ := talosapi.ImageVersion(talosapi.ConfigKubeletImage([]byte(config)))
	return v
}

// sameVersion compares versions with or without the "v"; want "" (not
// known) matches anything.
func sameVersion(have, want string) bool {
	if want == "" {
		return true
	}
	a, errA := talosconfig.ParseVersion(have)
	b, errB := talosconfig.ParseVersion(want)
	if errA != nil || errB != nil {
		return have == want
	}
	return a.Equals(b)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
