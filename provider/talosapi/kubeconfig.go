package talosapi

import (
	"context"
	"fmt"
)

// Kubeconfig is an admin kubeconfig fetched from a control plane node.
type Kubeconfig struct {
	// Raw is the kubeconfig YAML (a secret).
	Raw []byte
	// Info is what it holds.
	Info *KubeconfigInfo
}

// FetchKubeconfig asks a control plane node for an admin kubeconfig
// through the Kubeconfig API (each call issues a new client certificate
// from the cluster's Kubernetes CA) and, when server is not empty, points it
// at server (for example the VIP's https://10.5.0.10:6443) instead of the
// cluster endpoint in the node's configuration. It waits while the node is
// unreachable or still in maintenance mode.
func FetchKubeconfig(ctx context.Context, t Target, server string, o Options) (*Kubeconfig, error) {
	o = o.withDefaults()

	if server != "" {
		s, err := KubernetesEndpoint(server)
		if err != nil {
			return nil, err
		}

		server = s
	}

	var out *Kubeconfig

	err := o.poll(ctx, fmt.Sprintf("node %s to hand out an admin kubeconfig", t.Node), func(ctx context.Context) (bool, string, error) {
		kc, state, err := fetchKubeconfigOnce(ctx, o, t, server)
		if err != nil || kc == nil {
			return false, state, err
		}

		out = kc

		return true, state, nil
	})

	return out, err
}

// fetchKubeconfigOnce makes one attempt; a nil kubeconfig without an error
// means not yet (the node is still in maintenance mode). server is already
// a normalised URL or "".
func fetchKubeconfigOnce(ctx context.Context, o Options, t Target, server string) (*Kubeconfig, string, error) {
	conn, state, err := dialOnce(ctx, o, t)
	if err != nil {
		return nil, state, err
	}
	defer conn.Close() //nolint:errcheck

	if conn.Mode == ModeMaintenance {
		return nil, "in maintenance mode (no configuration applied yet)", nil
	}

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	r, err := conn.client.KubeconfigRaw(conn.nodeContext(actx))
	if err != nil {
		return nil, state, kubeconfigCallErr(t, err)
	}

	raw, err := extractKubeconfig(r)
	r.Close() //nolint:errcheck

	if err != nil {
		// A stream cut by a reboot surfaces here too: retry, unless the
		// node answered with a status it means.
		return nil, state, kubeconfigCallErr(t, err)
	}

	if server != "" {
		if raw, err = RewriteServer(raw, server); err != nil {
			return nil, "", stop(fmt.Errorf("node %s sent a kubeconfig that cannot be rewritten: %w", t.Node, err))
		}
	}

	info, err := ParseKubeconfig(raw)
	if err != nil {
		return nil, "", stop(fmt.Errorf("node %s sent a kubeconfig that does not parse: %w", t.Node, err))
	}

	return &Kubeconfig{Raw: raw, Info: info}, state, nil
}

func kubeconfigCallErr(t Target, err error) error {
	if classify(err) == failPermanent {
		// e.g. workers: "kubeconfig is only available on control plane nodes"
		return stop(fmt.Errorf("node %s refused to hand out a kubeconfig: %s", t.Node, statusMessage(err)))
	}

	return err
}
