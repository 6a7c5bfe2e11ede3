package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// planner recomputes the plan, which is pure and deterministic: inside the
// apply that generates the machine configurations it runs again with the
// Proxmox CCM token secret in place of the placeholder.
type planner struct {
	args  *TalosClusterArgs
	facts plan.Facts
	prev  *plan.State
	// stackTag is the owning stack's VM tag (plan.StackTag).
	stackTag string
}

func (pl *planner) compute(tokenSecret string) (*plan.Plan, error) {
	return plan.Compute(toSpec(pl.args, tokenSecret, pl.stackTag), pl.facts, pl.prev)
}

// machineConfigs generates every node's machine configuration (secret) from
// the cluster's secrets bundle, by node name.
func machineConfigs(p *plan.Plan, secretsYAML string) (map[string]string, error) {
	bundle, err := talosconfig.UnmarshalSecrets(secretsYAML)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's machine secrets: %w", err)
	}
	out := map[string]string{}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		in, err := p.GenerateInput(n, bundle, "")
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		res, err := talosconfig.Generate(in)
		if err != nil {
			return nil, fmt.Errorf("machine configuration of node %s: %w", n.Name, err)
		}
		out[n.Name] = res.Config
	}
	return out, nil
}

// checkConfigs generates every node's configuration, so that a patch Talos
// refuses fails the preview before anything changes: with the cluster's own
// secrets bundle when it exists (secretsYAML), else with a throwaway one (a
// new cluster's real secrets are unknown until MachineSecrets exists).
// On a Kubernetes upgrade it runs the pre-checks of `talosctl upgrade-k8s`
// on them: a flag, feature gate or admission plugin the new minor removed
// fails the preview, before any node changes. Configurations of the real
// bundle are returned, for the applies to take instead of generating them
// again (generated.reuse); nil with a throwaway bundle.
func checkConfigs(p *plan.Plan, prev *plan.State, secretsYAML string) (*generated, error) {
	yaml := secretsYAML
	if yaml == "" {
		var err error
		if yaml, err = throwawaySecrets(p.Cluster.TalosVersion); err != nil {
			return nil, err
		}
	}
	cfgs, err := machineConfigs(p, yaml)
	if err != nil {
		return nil, err
	}
	if err := checkKubernetesUpgrade(p, prev, cfgs); err != nil {
		return nil, err
	}
	if secretsYAML == "" {
		return nil, nil
	}
	return &generated{plan: p, secrets: secretsYAML, configs: cfgs}, nil
}

// generated are the configurations checkConfigs made from a plan and the
// cluster's own secrets bundle: generation is pure, so the same plan and
// bundle give the same configurations, and a preview generates each once.
type generated struct {
	plan    *plan.Plan
	secrets string
	configs map[string]string
}

// reuse is the configurations of plan p with bundle secretsYAML, when these
// are the ones generated (a copy: each apply's output owns its map).
func (g *generated) reuse(p *plan.Plan, secretsYAML string) (map[string]string, bool) {
	if g == nil || g.plan != p || g.secrets != secretsYAML {
		return nil, false
	}
	return maps.Clone(g.configs), true
}

// checkKubernetesUpgrade reports, per node whose Kubernetes version moves,
// what its new configuration names that the new version removed.
func checkKubernetesUpgrade(p *plan.Plan, prev *plan.State, cfgs map[string]string) error {
	if prev == nil {
		return nil
	}
	var problems []string
	for _, n := range p.Nodes {
		i := slices.IndexFunc(prev.Nodes, func(o plan.NodeState) bool { return o.Name == n.Name })
		if i < 0 || prev.Nodes[i].KubernetesVersion == "" || prev.Nodes[i].KubernetesVersion == p.Cluster.KubernetesVersion {
			continue
		}
		cfg, err := configloader.NewFromBytes([]byte(cfgs[n.Name]))
		if err != nil {
			return fmt.Errorf("machine configuration of node %s: %w", n.Name, err)
		}
		for _, pr := range talosconfig.KubernetesUpgradeProblems(cfg, prev.Nodes[i].KubernetesVersion, p.Cluster.KubernetesVersion) {
			problems = append(problems, "node "+n.Name+": "+pr)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("kubernetesVersion: the upgrade would start components with settings Kubernetes removed "+
			"(the pre-checks of talosctl upgrade-k8s); change the patches first:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// throwaway bundles by Talos version, made once per provider process
// (talosconfig.NewCheckSecrets: no RSA key, a few milliseconds).
var throwaway = struct {
	sync.Mutex
	byVersion map[string]string
}{byVersion: map[string]string{}}

func throwawaySecrets(talosVersion string) (string, error) {
	throwaway.Lock()
	defer throwaway.Unlock()
	if y, ok := throwaway.byVersion[talosVersion]; ok {
		return y, nil
	}
	bundle, err := talosconfig.NewCheckSecrets(talosVersion, time.Now())
	if err != nil {
		return "", err
	}
	y, err := talosconfig.MarshalSecrets(bundle)
	if err != nil {
		return "", err
	}
	throwaway.byVersion[talosVersion] = y
	return y, nil
}
