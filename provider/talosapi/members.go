package talosapi

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// ReadMembers asks controlPlanes which nodes the cluster knows, by name,
// with an address: its Kubernetes Node objects (which stay, NotReady, when
// a node's machine is gone) and its etcd members (the control planes).
// Read-only, so previews may ask. Each control plane is given at most
// perCP, and one that has not answered within a quarter of that is joined
// by the next: a control plane whose API server hangs on a paused etcd
// member does not use up the caller's time while the others could answer.
// The first full answer wins. When none comes, the error says why, and the
// etcd members one control plane gave (control planes only) come with it:
// a node missing from those is not unknown to the cluster.
func ReadMembers(ctx context.Context, controlPlanes []string, creds *Credentials, o Options, perCP time.Duration) (map[string]string, error) {
	o = o.withDefaults()

	if len(controlPlanes) == 0 {
		return nil, errors.New("no control plane to ask")
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the ones still asking give up

	type answer struct {
		cp      string
		members map[string]string
		err     error
	}

	hedge := newHedge(perCP / 4)
	defer hedge.Stop()

	answers := make(chan answer, len(controlPlanes))
	next := 0
	// Every ask restarts the hedge interval, also one made because an
	// answer failed: each ask mints a new admin certificate (which
	// cannot be revoked), so at most one more is asked per interval.
	ask := func() {
		cp := controlPlanes[next]
		next++

		hedge.Reset(perCP / 4)

		go func() {
			m, err := readMembersFrom(ctx, Target{Node: cp, Creds: creds}, o, perCP)
			answers <- answer{cp, m, err}
		}()
	}

	ask()

	var (
		partial map[string]string
		errs    []error
	)

	for asking := 1; asking > 0; {
		select {
		case a := <-answers:
			asking--

			if a.err == nil {
				return a.members, nil
			}

			if len(a.members) > len(partial) {
				partial = a.members
			}

			errs = append(errs, fmt.Errorf("%s: %w", a.cp, a.err))

			if next < len(controlPlanes) && ctx.Err() == nil {
				ask()
				asking++
			}
		case <-hedge.C():
			if next < len(controlPlanes) {
				ask()
				asking++
			}
		}
	}

	return partial, errors.Join(errs...)
}

// Seams for the hedge's unit tests, which need a reader that hangs or
// answers on cue and a clock they move, not the wall clock.
var (
	readMembersFrom = readMembersVia
	newHedge        = func(d time.Duration) hedgeTimer { return realHedge{time.NewTimer(d)} }
)

type hedgeTimer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

type realHedge struct{ t *time.Timer }

func (h realHedge) C() <-chan time.Time   { return h.t.C }
func (h realHedge) Reset(d time.Duration) { h.t.Reset(d) }
func (h realHedge) Stop()                 { h.t.Stop() }

func readMembersVia(ctx context.Context, t Target, o Options, within time.Duration) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()

	out := map[string]string{}

	conn, err := ConnectSecure(ctx, t, o)
	if err != nil {
		return nil, err
	}

	// Without etcd quorum the list fails; the Node objects may still say.
	members, etcdErr := etcdMembers(ctx, o, conn)
	conn.Close() //nolint:errcheck

	for _, m := range members {
		if hosts := peerHosts(m.GetPeerUrls()); m.GetHostname() != "" && len(hosts) > 0 {
			out[m.GetHostname()] = hosts[0]
		}
	}

	server, err := KubernetesEndpoint(t.nodeHost())
	if err != nil {
		return nil, err
	}

	kc, _, err := fetchKubeconfigOnce(ctx, o, t, server)
	if kc == nil {
		return partialMembers(out, errors.Join(etcdErr, err, errors.New("no admin kubeconfig")))
	}

	api, err := newKubeAPI(kc.Info, "")
	if err != nil {
		return partialMembers(out, err)
	}
	defer api.close()

	actx, acancel := o.attemptContext(ctx)
	defer acancel()

	body, err := api.get(actx, "/api/v1/nodes")
	if err != nil {
		return partialMembers(out, err)
	}

	nodes, err := parseNodes(body)
	if err != nil {
		return partialMembers(out, err)
	}

	for _, n := range nodes {
		for _, a := range n.Addresses {
			if _, err := netip.ParseAddr(a); err == nil {
				out[n.Name] = a

				break
			}
		}
	}

	return out, nil
}

// partialMembers is what was learned without the Kubernetes Node objects
// (the etcd members at most), with why they were not read: the workers
// are not among them, so it is never a full answer.
func partialMembers(out map[string]string, err error) (map[string]string, error) {
	err = fmt.Errorf("the Kubernetes Node objects were not read: %w", err)
	if len(out) > 0 {
		return out, err
	}

	return nil, err
}
