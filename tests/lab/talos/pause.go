package talos

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// A paused VM (Proxmox status/suspend: QMP "stop") runs no guest code:
// nothing on the node answers, its etcd member and kubelet are down, and it
// holds no VIP, until QEMU continues it, where it left off (no new boot).
// What the simulator runs on its own clock (a boot, an install in
// progress) is not frozen.

// Pause stops the node's guest code.
func (n *Node) Pause() {
	s := n.sim

	s.mu.Lock()
	if n.thaw != nil {
		s.mu.Unlock()

		return
	}

	n.thaw = make(chan struct{})

	if n.etcd != nil {
		n.etcd.running = false
	}

	ep := n.etcdProc
	s.mu.Unlock()

	ep.pause() // a real member's process stops with the vCPUs

	n.logf("paused (QEMU stopped the vCPUs)")
	s.nudge()
}

// Resume continues a paused node.
func (n *Node) Resume() {
	s := n.sim

	s.mu.Lock()
	if n.thaw == nil {
		s.mu.Unlock()

		return
	}

	close(n.thaw)
	n.thaw = nil

	if n.etcd != nil && !n.etcd.wiped {
		n.etcd.running = true // the SIGCONTed process (below)
	}

	ep := n.etcdProc
	s.mu.Unlock()

	ep.resume()

	n.logf("resumed")
	s.nudge()
}

// paused is closed when the node is continued; nil while it runs.
func (n *Node) paused() <-chan struct{} {
	n.sim.mu.Lock()
	defer n.sim.mu.Unlock()

	return n.thaw
}

// awaitRunning holds a call to a paused node until it is continued or the
// caller gives up, as a call to a frozen guest never gets an answer.
func (n *Node) awaitRunning(ctx context.Context) error {
	thaw := n.paused()
	if thaw == nil {
		return nil
	}

	select {
	case <-thaw:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-n.ctx.Done():
		return status.FromContextError(context.Canceled).Err()
	}
}

func (n *Node) pauseUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := n.awaitRunning(ctx); err != nil {
		return nil, err
	}

	return h(ctx, req)
}

func (n *Node) pauseStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := n.awaitRunning(ss.Context()); err != nil {
		return err
	}

	return h(srv, ss)
}
