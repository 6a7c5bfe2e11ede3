package talosapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// ReadNodename reads the name the node registers with in Kubernetes (the
// Nodename resource, `talosctl get nodename`): the hostname, or the FQDN
// with machine.kubelet.registerWithFQDN.
func ReadNodename(ctx context.Context, t Target, o Options) (string, error) {
	o = o.withDefaults()

	conn, err := ConnectSecure(ctx, t, o)
	if err != nil {
		return "", err
	}
	defer conn.Close() //nolint:errcheck

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	nn, err := safe.StateGetByID[*k8s.Nodename](conn.nodeContext(actx), conn.client.COSI, k8s.NodenameID)
	if err != nil {
		return "", fmt.Errorf("reading the Kubernetes node name of node %s: %s", t.Node, statusMessage(err))
	}

	return nn.TypedSpec().Nodename, nil
}

// RemoveNodeRequest names a Kubernetes Node object to delete once its
// machine is gone. A Talos reset (graceful or not) leaves the Node object
// behind, NotReady: Talos' reset sequence cordons and drains, leaves etcd
// and wipes, but never deletes it (siderolabs/talos v1.12.5
// internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_sequencer.go Reset),
// which is why `kubectl delete node` follows `talosctl reset`.
type RemoveNodeRequest struct {
	// Name is the Node object's name (ReadNodename).
	Name string
	// Address is the removed machine's address. The object is deleted only
	// when it carries this address: another machine may have registered
	// under the same name since.
	Address string
	// ControlPlanes are tried in order for an admin kubeconfig (the
	// Kubeconfig API of the Talos API); the Kubernetes API is then reached
	// on that control plane's own address, port 6443, not through a VIP
	// that may be moving away from the removed node.
	ControlPlanes []string
	// Creds are the cluster's Talos client credentials.
	Creds *Credentials
	// PerControlPlane bounds the attempts on one control plane. Default 30s.
	PerControlPlane time.Duration
}

// RemoveNodeResult says what happened to the Node object.
type RemoveNodeResult struct {
	// Deleted is true when this call deleted it; Found is false when it
	// did not exist (any more).
	Deleted, Found bool
	// Cordoned and Ready are what the object said just before deletion
	// (spec.unschedulable, the Ready condition).
	Cordoned, Ready bool
	// Via is the control plane whose Kubernetes API answered.
	Via string
	// Skipped explains why an existing object was kept.
	Skipped string
}

// RemoveKubernetesNode deletes a removed machine's Node object through the
// Kubernetes API of the first control plane that answers. It fails only
// when no control plane could be reached; the error lists what each said.
func RemoveKubernetesNode(ctx context.Context, req RemoveNodeRequest, o Options) (RemoveNodeResult, error) {
	o = o.withDefaults()

	if req.PerControlPlane <= 0 {
		req.PerControlPlane = 30 * time.Second
	}

	if strings.TrimSpace(req.Name) == "" {
		return RemoveNodeResult{}, errors.New("no Kubernetes node name to delete")
	}

	var tried []string

	for _, cp := range req.ControlPlanes {
		if SameHost(cp, req.Address) {
			continue // the removed node itself
		}

		res, err := removeVia(ctx, req, cp, o)
		if err == nil {
			res.Via = cp
			return res, nil
		}

		tried = append(tried, fmt.Sprintf("%s: %s", cp, firstLineOf(err.Error())))

		if ctx.Err() != nil {
			break
		}
	}

	if len(tried) == 0 {
		return RemoveNodeResult{}, errors.New("no other control plane to reach the Kubernetes API through")
	}

	return RemoveNodeResult{}, fmt.Errorf("no control plane's Kubernetes API answered (%s)", strings.Join(tried, "; "))
}

func removeVia(ctx context.Context, req RemoveNodeRequest, cp string, o Options) (RemoveNodeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, req.PerControlPlane)
	defer cancel()

	// The control plane's own API server (cluster.controlPlane.localAPIServerPort,
	// default 6443): its serving certificate names the node's addresses.
	server, err := KubernetesEndpoint(hostOf(cp))
	if err != nil {
		return RemoveNodeResult{}, err
	}

	kc, err := FetchKubeconfig(ctx, Target{Node: cp, Creds: req.Creds}, server, o)
	if err != nil {
		return RemoveNodeResult{}, err
	}

	api, err := newKubeAPI(kc.Info, "")
	if err != nil {
		return RemoveNodeResult{}, err
	}
	defer api.close()

	var res RemoveNodeResult

	err = o.poll(ctx, fmt.Sprintf("the Kubernetes API on %s to delete node %s", hostOf(cp), req.Name), func(ctx context.Context) (bool, string, error) {
		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		var err error

		res, err = api.removeNode(actx, req.Name, hostOf(req.Address))

		return err == nil, "", err
	})

	return res, err
}

// removeNode reads the Node object, checks it is the removed machine's and
// deletes it.
func (k *kubeAPI) removeNode(ctx context.Context, name, address string) (RemoveNodeResult, error) {
	path := "/api/v1/nodes/" + url.PathEscape(name)

	status, body, err := k.do(ctx, http.MethodGet, path)
	if err != nil {
		return RemoveNodeResult{}, err
	}

	switch {
	case status == http.StatusNotFound:
		return RemoveNodeResult{}, nil
	case status != http.StatusOK:
		return RemoveNodeResult{}, fmt.Errorf("GET %s: HTTP %d: %s", path, status, short(body))
	}

	n, err := parseNode(body)
	if err != nil {
		return RemoveNodeResult{}, err
	}

	res := RemoveNodeResult{Found: true, Cordoned: n.Unschedulable, Ready: n.Ready}

	if address != "" && !slices.Contains(n.Addresses, address) {
		res.Skipped = fmt.Sprintf("node %s has addresses %s, not %s: another machine registered under this name", name, strings.Join(n.Addresses, ", "), address)

		return res, nil
	}

	status, body, err = k.do(ctx, http.MethodDelete, path)
	if err != nil {
		return RemoveNodeResult{}, err
	}

	switch status {
	case http.StatusOK, http.StatusAccepted:
		res.Deleted = true
	case http.StatusNotFound: // deleted meanwhile
	default:
		return RemoveNodeResult{}, fmt.Errorf("DELETE %s: HTTP %d: %s", path, status, short(body))
	}

	return res, nil
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")

	return s
}

// ConfigNodename is the Kubernetes node name a machine configuration gives
// its node when it sets a static hostname (lowercased, as the kubelet
// registers it), or "".
func ConfigNodename(machineConfig []byte) string {
	cfg, err := loadConfig(machineConfig)
	if err != nil {
		return ""
	}

	if h := cfg.NetworkHostnameConfig(); h != nil {
		return strings.ToLower(h.Hostname())
	}

	return ""
}

// ConfigIsControlPlane reports whether a machine configuration is a control
// plane's (machine.type controlplane or init).
func ConfigIsControlPlane(machineConfig []byte) bool {
	cfg, err := loadConfig(machineConfig)

	return err == nil && cfg.Machine() != nil && cfg.Machine().Type().IsControlPlane()
}

// ConfigIssuingCA is the Talos API CA certificate (PEM) a machine
// configuration gives its node (machine.ca.crt), nil when the configuration
// does not parse or has none.
func ConfigIssuingCA(machineConfig []byte) []byte {
	cfg, err := loadConfig(machineConfig)
	if err != nil || cfg.Machine() == nil || cfg.Machine().Security().IssuingCA() == nil {
		return nil
	}

	return cfg.Machine().Security().IssuingCA().Crt
}
