package cluster

import (
	"fmt"
	"sync"
	"time"

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

// checkConfigs generates every node's configuration with a throwaway
// secrets bundle, so that a patch Talos refuses fails the preview of a new
// cluster too (its real secrets are unknown until MachineSecrets exists).
func checkConfigs(p *plan.Plan) error {
	yaml, err := throwawaySecrets(p.Cluster.TalosVersion)
	if err != nil {
		return err
	}
	_, err = machineConfigs(p, yaml)
	return err
}

// throwaway bundles by Talos version, made once per provider process:
// generating one takes most of a second (RSA keys).
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
	bundle, err := talosconfig.NewSecrets(talosVersion, time.Now())
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
