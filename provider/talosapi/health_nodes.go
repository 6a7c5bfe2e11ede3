package talosapi

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// healthNode is a node a health check requires, with the services its role
// must run.
type healthNode struct {
	addr         string
	required     []string
	controlPlane bool
}

// nodeCheck is what one node's Talos API said in a health check.
type nodeCheck struct {
	problems []string
	// down: the node's machine is known to be off (Options.Machines).
	down *MachineDownError
	// kubeletSince is when the node's kubelet started (runningSince), set
	// when the service list had a kubelet.
	kubeletSince time.Time
	kubelet      bool
	// etcd is what is wrong with etcd as this control plane sees it, "" when
	// nothing is (or it was not asked).
	etcd string
}

// healthSlots bounds the nodes the health checks of the whole process ask
// at once: the gates of a pool of new workers run together, and one bound
// per check would multiply the connections by the pool's size.
var healthSlots = make(chan struct{}, 32)

// checkTalosNodes asks the nodes at the same time and returns their answers
// in node order. One at a time, a check of a large cluster took the sum of
// its nodes' answers, and a slow answer (a control plane whose etcd client
// waits out its dial timeout) delayed the whole check, and so the moment a
// wait sees the cluster healthy.
func checkTalosNodes(ctx context.Context, o Options, req HealthRequest, nodes []healthNode) []nodeCheck {
	out := make([]nodeCheck, len(nodes))

	var wg sync.WaitGroup

	for i, n := range nodes {
		select {
		case healthSlots <- struct{}{}:
		case <-ctx.Done():
			out[i].problems = []string{fmt.Sprintf("node %s: not checked: %v", n.addr, ctx.Err())}

			continue
		}

		wg.Add(1)

		go func() {
			defer wg.Done()
			defer func() { <-healthSlots }()

			out[i] = checkTalosNode(ctx, o, req, n)
		}()
	}

	wg.Wait()

	return out
}

// checkTalosNode asks one node for its services and, on a control plane,
// its etcd members.
func checkTalosNode(ctx context.Context, o Options, req HealthRequest, n healthNode) nodeCheck {
	var c nodeCheck

	t := Target{Node: n.addr, Endpoints: req.Endpoints, Creds: req.Creds}

	conn, _, err := dialOnce(ctx, o, t)
	if err != nil {
		c.down, _ = asMachineDown(err)
		c.problems = append(c.problems, fmt.Sprintf("node %s: %s", n.addr, shortErr(err)))

		return c
	}
	defer conn.Close() //nolint:errcheck

	if conn.Mode == ModeMaintenance {
		c.problems = append(c.problems, fmt.Sprintf("node %s: in maintenance mode", n.addr))

		return c
	}

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	etcdStopped := false

	resp, err := conn.client.ServiceList(conn.nodeContext(actx))
	if err != nil {
		c.problems = append(c.problems, fmt.Sprintf("node %s: services: %s", n.addr, statusMessage(err)))
	} else {
		var svcs []*machineapi.ServiceInfo
		for _, m := range resp.GetMessages() {
			svcs = append(svcs, m.GetServices()...)
		}

		if p := checkServices(svcs, n.required); p != "" {
			c.problems = append(c.problems, fmt.Sprintf("node %s: %s", n.addr, p))
		}

		if i := slices.IndexFunc(svcs, func(s *machineapi.ServiceInfo) bool { return s.GetId() == "kubelet" }); i >= 0 {
			c.kubeletSince, c.kubelet = runningSince(svcs[i]), true
		}

		etcdStopped = !slices.ContainsFunc(svcs, func(s *machineapi.ServiceInfo) bool {
			return s.GetId() == "etcd" && s.GetState() == "Running"
		})
	}

	// A control plane whose etcd service does not run (still joining,
	// waiting for the bootstrap) has nothing on localhost:2379, and Talos's
	// etcd client waits out its 5 s dial timeout before saying so
	// (internal/pkg/etcd/etcd.go NewLocalClient): the services line above
	// already says what is wrong, so it is not asked.
	if !n.controlPlane || etcdStopped {
		return c
	}

	members, err := conn.client.EtcdMemberList(conn.nodeContext(actx), &machineapi.EtcdMemberListRequest{QueryLocal: true})
	if err != nil {
		c.problems = append(c.problems, fmt.Sprintf("node %s: etcd members: %s", n.addr, statusMessage(err)))

		return c
	}

	var ms []*machineapi.EtcdMember
	for _, m := range members.GetMessages() {
		ms = append(ms, m.GetMembers()...)
	}

	c.etcd = checkEtcd(withoutMembers(ms, req.Others), req.ControlPlanes)

	return c
}
