package talosapi

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// ReadMembers asks the first of controlPlanes that answers which nodes the
// cluster knows, by name, with an address: its Kubernetes Node objects
// (which stay, NotReady, when a node's machine is gone) and its etcd
// members (the control planes). Read-only, so previews may ask. Each
// control plane is given at most perCP.
func ReadMembers(ctx context.Context, controlPlanes []string, creds *Credentials, o Options, perCP time.Duration) (map[string]string, error) {
	o = o.withDefaults()

	var errs []error

	for _, cp := range controlPlanes {
		m, err := readMembersVia(ctx, Target{Node: cp, Creds: creds}, o, perCP)
		if err == nil {
			return m, nil
		}

		errs = append(errs, fmt.Errorf("%s: %w", cp, err))

		if ctx.Err() != nil {
			break
		}
	}

	if len(errs) == 0 {
		return nil, errors.New("no control plane to ask")
	}

	return nil, errors.Join(errs...)
}

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
		return membersOrErr(out, errors.Join(etcdErr, err, errors.New("no admin kubeconfig")))
	}

	api, err := newKubeAPI(kc.Info, "")
	if err != nil {
		return membersOrErr(out, err)
	}
	defer api.close()

	actx, acancel := o.attemptContext(ctx)
	defer acancel()

	body, err := api.get(actx, "/api/v1/nodes")
	if err != nil {
		return membersOrErr(out, err)
	}

	nodes, err := parseNodes(body)
	if err != nil {
		return membersOrErr(out, err)
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

// membersOrErr is what was learned when some of it was, else err.
func membersOrErr(out map[string]string, err error) (map[string]string, error) {
	if len(out) > 0 {
		return out, nil
	}

	return nil, err
}
