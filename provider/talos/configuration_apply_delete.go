package talos

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// goneAfter is how long a node is given to answer on its Talos API before
// a destroy treats it as gone (its VM stopped, deleted or unreachable) and
// skips its reset; probeMember is the same for the other etcd members when
// a control plane leaves. Both are capped by the delete's own timeout.
const (
	goneAfter   = 30 * time.Second
	probeMember = 10 * time.Second
)

// Delete resets the node when asked; otherwise the node keeps running. A
// destroy always finishes: a node that does not answer is not reset (with a
// warning naming it), its etcd member is removed through a control plane
// that answers and its Kubernetes Node object deleted; a control plane
// that leaves while other members are down removes those first, so that
// etcd accepts the leave.
func (r *ConfigurationApply) Delete(ctx context.Context, req infer.DeleteRequest[ConfigurationApplyState]) (infer.DeleteResponse, error) {
	st := req.State
	if st.Reset == nil || !boolOr(st.Reset.Enabled, false) {
		return infer.DeleteResponse{}, nil
	}

	t, err := nodeTarget(st.Node, st.Endpoints, st.ClientConfiguration)
	if err != nil {
		return infer.DeleteResponse{}, err
	}

	log := enginelog.Logger(ctx)
	label := labelNode(st.Node, []byte(st.MachineConfiguration))

	// One node of the cluster at a time (leaving). The wait for its turn
	// comes before the delete's own clock starts, so that the k-th node of
	// a destroy still has its whole timeout for its reset.
	unlock, err := r.locks().lock(ctx, clusterKey(t.Creds.CA), label)
	if err != nil {
		return infer.DeleteResponse{}, fmt.Errorf("%w; %s", err, waitAdvice(ctx))
	}
	defer unlock()

	ctx, cancel, err := withTimeout(ctx, st.Timeouts, "delete")
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	defer cancel()

	o := apiOptions(ctx, r.opts)

	answerFn, resetFn := talosapi.Answers, talosapi.Reset
	if r.answers != nil {
		answerFn, resetFn = r.answers, r.reset
	}

	// Asked once the node has its turn: the answer is fresh.
	answers, err := answerFn(ctx, t, o, capped(ctx, goneAfter))
	if err != nil {
		return infer.DeleteResponse{}, fmt.Errorf("reaching %s to reset it: %w", nodeWho(st.Node, label, err), err)
	}

	if !answers {
		log.Warningf("node %s does not answer on the Talos API (its VM is stopped, deleted or unreachable): it is not reset", label)
		r.forgetNode(ctx, st, t.Creds, o)

		return infer.DeleteResponse{}, nil
	}

	// The Kubernetes node name is read before the reset wipes it.
	nodename := ""
	if len(st.Reset.ControlPlanes) > 0 {
		nodename = r.nodename(ctx, t, st, o)
	}

	res, err := resetFn(ctx, t, talosapi.ResetRequest{
		Graceful:     boolOr(st.Reset.Graceful, true),
		Reboot:       boolOr(st.Reset.Reboot, false),
		ProbeMembers: capped(ctx, probeMember),
	}, o)
	for _, m := range res.Removed {
		log.Warningf("etcd member %s (%s) does not answer: it was removed from etcd so that node %s could leave without "+
			"the cluster losing quorum; if that node comes back, reset it to rejoin", m.Hostname, m.Address, label)
	}

	if err != nil {
		return infer.DeleteResponse{}, fmt.Errorf("%w (%s)", err, destroyAdvice(ctx))
	}

	if len(st.Reset.ControlPlanes) > 0 {
		removeKubernetesNode(ctx, st, t.Creds, nodename, o)
	}

	return infer.DeleteResponse{}, nil
}

// forgetNode does for a node that is gone what its graceful reset would
// have done for the cluster: a control plane's etcd member is removed
// through a control plane that answers (reset.controlPlanes), and the Node
// object is deleted. Failures warn: the node is gone either way.
func (r *ConfigurationApply) forgetNode(ctx context.Context, st ConfigurationApplyState, creds *talosapi.Credentials, o talosapi.Options) {
	log := enginelog.Logger(ctx)
	cps := st.Reset.ControlPlanes

	if talosapi.ConfigIsControlPlane([]byte(st.MachineConfiguration)) {
		res, err := talosapi.RemoveEtcdMember(ctx, st.Node, cps, creds, o, capped(ctx, goneAfter))

		switch {
		case len(cps) == 0:
			log.Warningf("node %s was a control plane: if it was an etcd member, remove it with talosctl etcd remove-member "+
				"(no reset.controlPlanes to do it through)", st.Node)
		case err != nil:
			log.Warningf("node %s was a control plane, and its etcd member could not be removed: %s; remove it with "+
				"talosctl etcd remove-member once a control plane answers", st.Node, err)
		case res.Found:
			log.Infof("node %s: its etcd member %s was removed through control plane %s", st.Node, res.Hostname, res.Via)
		default:
			log.Infof("node %s has no etcd member (any more)", st.Node)
		}
	}

	if len(cps) > 0 {
		removeKubernetesNode(ctx, st, creds, talosapi.ConfigNodename([]byte(st.MachineConfiguration)), o)
	}
}

// capped is d, or less when the context's deadline comes sooner: a wait
// never outlasts the operation's timeout.
func capped(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) / 2; left < d {
			return max(left, time.Second)
		}
	}

	return d
}

// locks are the per-cluster locks Delete takes: the package's, unless a
// test gave its own.
func (r *ConfigurationApply) locks() *clusterLocks {
	if r.leaving != nil {
		return r.leaving
	}

	return leaving
}

// waitAdvice says what to do when a node's wait for its turn to leave is
// cut off. A TalosCluster's nodes have no timeouts input, and the engine
// gives them no customTimeouts.
func waitAdvice(ctx context.Context) string {
	if strings.Contains(string(framework.URN(ctx)), "proxmoxtalos:index:TalosCluster$") {
		return "run the pulumi destroy or pulumi up that removed it again: the nodes already reset stay gone"
	}

	return "run the same pulumi command again, or raise the resource's customTimeouts delete value " +
		"(timeouts.delete counts from the node's turn, not the wait)"
}

// destroyAdvice says what to do when a node answers but its reset fails,
// in the inputs the user has: a TalosCluster's nodes have no reset input of
// their own.
func destroyAdvice(ctx context.Context) string {
	urn := string(framework.URN(ctx))
	if strings.Contains(urn, "proxmoxtalos:index:TalosCluster$") {
		return fmt.Sprintf("the node is left as it is; see what it says with talosctl dmesg, then run pulumi destroy "+
			"again; to destroy the cluster without resetting this node (its VM is deleted next), first run: "+
			"pulumi state delete '%s'", urn)
	}

	return "to destroy anyway, change reset (enabled: false to leave the node alone, or graceful: false) and run pulumi up first"
}

// nodename is the node's Kubernetes node name: what the node reports, or
// the hostname of its configuration when it does not answer over mTLS (a
// node reset outside Pulumi is in maintenance mode).
func (r *ConfigurationApply) nodename(ctx context.Context, t talosapi.Target, st ConfigurationApplyState, o talosapi.Options) string {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	name, err := talosapi.ReadNodename(rctx, t, o)
	if err == nil && name != "" {
		return name
	}

	return talosapi.ConfigNodename([]byte(st.MachineConfiguration))
}

// removeKubernetesNode deletes the reset node's Node object, which Talos
// leaves behind. The node is gone already: a failure here only warns, so
// that the VM can be destroyed and the update goes on.
func removeKubernetesNode(ctx context.Context, st ConfigurationApplyState, creds *talosapi.Credentials, nodename string, o talosapi.Options) {
	log := enginelog.Logger(ctx)

	if nodename == "" {
		log.Warningf("node %s was reset, but its Kubernetes node name is unknown (it did not answer and its configuration sets no hostname): delete its Node object with kubectl delete node", st.Node)

		return
	}

	res, err := talosapi.RemoveKubernetesNode(ctx, talosapi.RemoveNodeRequest{
		Name: nodename, Address: st.Node, ControlPlanes: st.Reset.ControlPlanes, Creds: creds,
	}, o)

	switch {
	case err != nil:
		log.Warningf("node %s was reset, but its Kubernetes Node object %s could not be deleted: %s; delete it with kubectl delete node %s", st.Node, nodename, err, nodename)
	case res.Skipped != "":
		log.Warningf("node %s was reset; Kubernetes Node object %s is kept: %s", st.Node, nodename, res.Skipped)
	case !res.Found:
		log.Infof("node %s was reset; it has no Kubernetes Node object %s (any more)", st.Node, nodename)
	default:
		log.Infof("node %s was reset; its Kubernetes Node object %s (%s, %s) was deleted through control plane %s", st.Node, nodename, cordonText(res.Cordoned), readyText(res.Ready), res.Via)
	}
}

func cordonText(cordoned bool) string {
	if cordoned {
		return "cordoned"
	}

	return "not cordoned"
}

func readyText(ready bool) string {
	if ready {
		return "Ready"
	}

	return "NotReady"
}
