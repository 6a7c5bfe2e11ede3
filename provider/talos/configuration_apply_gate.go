package talos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// defaultGateTimeout bounds each wait of a health gate.
const defaultGateTimeout = 10 * time.Minute

// gatePhase is when a gate waits: before the node is changed, the other
// required nodes must be healthy; after, all of them with the node.
type gatePhase string

const (
	gateBefore gatePhase = "before"
	gateAfter  gatePhase = "after"
)

// checkHealthGate validates a health gate.
func checkHealthGate(g *HealthGate) []p.CheckFailure {
	if g == nil {
		return nil
	}

	var fails []p.CheckFailure

	if len(g.ControlPlanes) == 0 {
		fails = append(fails, p.CheckFailure{Property: "healthGate.controlPlanes", Reason: "a health gate needs at least one control plane address (etcd and the Kubernetes API are checked through them)"})
	}

	for field, list := range map[string][]string{"controlPlanes": g.ControlPlanes, "workers": g.Workers, "otherNodes": g.OtherNodes} {
		for i, a := range list {
			fails = append(fails, checkNodeAddress(fmt.Sprintf("healthGate.%s[%d]", field, i), a)...)
		}
	}

	if g.KubernetesEndpoint != nil && *g.KubernetesEndpoint != "" {
		if _, err := talosapi.KubernetesEndpoint(*g.KubernetesEndpoint); err != nil {
			fails = append(fails, p.CheckFailure{Property: "healthGate.kubernetesEndpoint", Reason: err.Error()})
		}
	}

	if _, err := gateTimeout(g); err != nil {
		fails = append(fails, p.CheckFailure{Property: "healthGate.timeout", Reason: err.Error()})
	}

	return fails
}

func gateTimeout(g *HealthGate) (time.Duration, error) {
	if g == nil || g.Timeout == nil || strings.TrimSpace(*g.Timeout) == "" {
		return defaultGateTimeout, nil
	}

	d, err := time.ParseDuration(*g.Timeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive Go duration like 10m or 90s", *g.Timeout)
	}

	return d, nil
}

// gateRequest is the health check of a gate phase for node, nil when there
// is nothing to check (no gate, or before the first control plane: no
// other node is required).
func gateRequest(g *HealthGate, node string, phase gatePhase) *talosapi.HealthRequest {
	if g == nil {
		return nil
	}

	req := &talosapi.HealthRequest{
		ControlPlanes: slices.Clone(g.ControlPlanes),
		Workers:       slices.Clone(g.Workers),
		Others:        slices.Clone(g.OtherNodes),
	}

	if phase == gateBefore {
		// The node itself may be what the update repairs.
		self := func(a string) bool { return talosapi.SameHost(a, node) }
		req.ControlPlanes = slices.DeleteFunc(req.ControlPlanes, self)
		req.Workers = slices.DeleteFunc(req.Workers, self)
		req.Others = append(req.Others, node)
	}

	if len(req.ControlPlanes) == 0 {
		return nil
	}

	req.KubeconfigFrom = req.ControlPlanes
	if g.KubernetesEndpoint != nil {
		req.KubernetesServer = *g.KubernetesEndpoint
	}

	return req
}

// waitGate waits for the gate's phase; nil without a gate.
func (r *ConfigurationApply) waitGate(ctx context.Context, in ConfigurationApplyArgs, phase gatePhase) error {
	return waitHealthGate(ctx, r.opts, gateTarget{gate: in.HealthGate, node: in.Node, endpoints: in.Endpoints, cc: in.ClientConfiguration, label: nodeLabel(in)}, phase)
}

// gateTarget is the node a health gate guards and how to reach the cluster.
type gateTarget struct {
	gate      *HealthGate
	node      string
	endpoints []string
	cc        ClientConfiguration
	label     string
}

// waitHealthGate waits for a gate's phase; nil without a gate.
func waitHealthGate(ctx context.Context, opts talosapi.Options, g gateTarget, phase gatePhase) error {
	req := gateRequest(g.gate, g.node, phase)
	if req == nil {
		return nil
	}

	creds, err := g.cc.credentials()
	if err != nil {
		return err
	}

	req.Creds, req.Endpoints = creds, g.endpoints

	d, err := gateTimeout(g.gate)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()

	label := g.label
	start := time.Now()

	if _, err := talosapi.WaitHealthy(ctx, *req, apiOptions(ctx, opts)); err != nil {
		if phase == gateBefore {
			return fmt.Errorf("node %s was not changed: the cluster is not healthy (%w); fix it, or wait, and run pulumi up again", label, err)
		}

		return fmt.Errorf("node %s was changed, but the cluster did not become healthy with it (%w); the next pulumi up checks again before it goes on", label, err)
	}

	enginelog.Logger(ctx).Infof("node %s: cluster healthy %s the change (%d control planes, %d workers, in %s)",
		label, phase, len(req.ControlPlanes), len(req.Workers), time.Since(start).Round(time.Millisecond))

	return nil
}
