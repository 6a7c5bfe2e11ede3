package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// readTimeout bounds how long the component waits for the cluster's
// credentials and for the nodes' running configurations: a node that does
// not answer is a warning, not a hang.
const readTimeout = 10 * time.Second

// runningNode is what a node runs: its active configuration and Talos
// version (both empty for a node in maintenance mode).
type runningNode struct {
	Config       string
	TalosVersion string
}

// configReader reads what a node runs. Tests replace it.
type configReader func(ctx context.Context, node string, creds *talosapi.Credentials) (runningNode, error)

func readRunningConfig(ctx context.Context, node string, creds *talosapi.Credentials) (runningNode, error) {
	// Configured: a running node of the rebuilt state is most likely
	// configured, so the mTLS call comes first (talosapi.Target.Configured:
	// one TLS handshake, not two); one that is not still answers as it is.
	nc, mode, version, err := talosapi.ReadActiveConfig(ctx, talosapi.Target{Node: node, Creds: creds, Configured: true}, readOptions())
	if err != nil || mode == talosapi.ModeMaintenance {
		return runningNode{}, err
	}
	return runningNode{Config: string(nc.Active), TalosVersion: version}, nil
}

// readOptions are the Talos API options of the readings before planning.
func readOptions() talosapi.Options {
	return talosapi.Options{AttemptTimeout: readTimeout / 2, DefaultTimeout: readTimeout}
}

// nodeReading is what one existing node answered before planning: what it
// runs, or why it did not answer.
type nodeReading struct {
	running runningNode
	err     error
}

// registerSecrets registers the cluster's MachineSecrets. Its talosVersion
// only sets the version contract of a new bundle: a Talos bundle is
// generated once and kept through upgrades (talosctl gen secrets writes it
// once; machinery's secrets.NewBundle takes the contract only to decide
// which secrets to generate), so a later version change is ignored rather
// than shown as a change of the secrets.
func registerSecrets(ctx *pulumi.Context, name string, comp *TalosCluster, talosVersion string) (*machineSecrets, error) {
	s := &machineSecrets{}
	args := &talos.MachineSecretsArgs{TalosVersion: talosVersion}
	err := registerChild(ctx, name+"-secrets", args, nil,
		s, pulumi.Parent(comp), pulumi.IgnoreChanges([]string{childargs.Name(args, &args.TalosVersion)}))
	return s, err
}

// awaitCredentials waits (at most readTimeout) for the admin client
// credentials of secrets that exist already. A bundle being created has none
// yet in a preview: nil and the reason.
func awaitCredentials(ctx context.Context, s *machineSecrets) (*talosapi.Credentials, string) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	r, err := internals.UnsafeAwaitOutput(ctx, s.ClientConfiguration)
	if err != nil {
		return nil, "the cluster's client credentials are not available (" + firstLine(err.Error()) + ")"
	}
	cc, ok := r.Value.(talos.ClientConfiguration)
	if !r.Known || !ok {
		return nil, "the cluster's machine secrets are not created yet"
	}
	return &talosapi.Credentials{CA: []byte(cc.CACertificate), Cert: []byte(cc.ClientCertificate), Key: []byte(cc.ClientKey)}, ""
}

// readNodes asks every node of the rebuilt state whose VM runs, in parallel
// and within readTimeout, what it runs: read-only over mTLS, so previews do
// it too. A node that does not answer in time is an error in its reading,
// not a hang. A node whose VM Proxmox reports stopped, paused or on an
// offline host is not asked: nothing can answer, so asking would only make
// every preview wait readTimeout for it; plan.PowerNotes says per node what
// the update does about it.
func readNodes(ctx context.Context, prev *plan.State, creds *talosapi.Credentials, read configReader) map[string]nodeReading {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	out := make(map[string]nodeReading, len(prev.Nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range prev.Nodes {
		if n.Power != plan.PowerRunning {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			running, err := read(ctx, n.Address, creds)
			mu.Lock()
			out[n.Name] = nodeReading{running: running, err: err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// withRunningVersions puts the versions each node runs into the rebuilt
// state (Proxmox does not know them), so that versions the program leaves
// out stay what runs and upgrades are checked from what runs. It returns a
// warning per node that did not answer.
func withRunningVersions(prev *plan.State, readings map[string]nodeReading) []string {
	var warnings []string
	for i := range prev.Nodes {
		n := &prev.Nodes[i]
		r, asked := readings[n.Name]
		if !asked {
			continue
		}
		if r.err != nil {
			warnings = append(warnings, fmt.Sprintf("node %s did not say what it runs (%s): its Talos and Kubernetes versions are not known, nor what a configuration change does to it; %s", n.Name, firstLine(r.err.Error()), unknownVersions))
			continue
		}
		if v, err := talosconfig.ParseVersion(r.running.TalosVersion); err == nil {
			n.TalosVersion = talosconfig.TalosTag(v)
		}
		if v, err := talosconfig.ParseVersion(kubeletVersion(r.running.Config)); err == nil {
			n.KubernetesVersion = "v" + v.String()
		}
	}
	return warnings
}

// silentNodes are the nodes that did not answer as configured Talos nodes
// (nil when none was asked): the plan does not make the first steps of an
// update wait for their health (plan.Waits).
func silentNodes(readings map[string]nodeReading) map[string]bool {
	if readings == nil {
		return nil
	}
	out := map[string]bool{}
	for name, r := range readings {
		if r.err != nil || r.running.Config == "" {
			out[name] = true
		}
	}
	return out
}

// unknownVersions says what the plan does without a node's versions.
const unknownVersions = "versions left out of the program are planned from the nodes that answered, else the provider's defaults: set talosVersion and kubernetesVersion to be sure"
