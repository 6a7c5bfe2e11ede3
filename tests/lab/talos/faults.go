package talos

import (
	"context"
	"math/rand/v2"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Faults are injected failures of the simulated nodes, for testing clients'
// retries.
type Faults struct {
	// APIErrorRate: this share of Talos API calls (maintenance service and
	// apid) fails with Unavailable before reaching the node, as a dropped
	// connection does.
	APIErrorRate float64
	// StopInUpgrade: the next this many upgrades are cut by their VM
	// stopping in the middle of the install (someone stopped it, or its
	// QEMU died): nothing of the new version is written, so the node boots
	// the old one when started again (Talos A/B boot entries: the new
	// one is only switched to once the install finished), and Proxmox
	// shows the VM stopped, as after `qm stop`.
	StopInUpgrade int
	// StagedInstallGate, when set, holds the install of a staged upgrade
	// in stage installing until it is closed (a slow installer pull), so
	// that a test can look at the node during the boot that runs it.
	StagedInstallGate <-chan struct{}
}

// SetFaults changes the injected faults.
func (s *Sim) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()

	s.faults = f
}

// takeStopInUpgrade reports whether this upgrade is cut by a stop.
func (s *Sim) takeStopInUpgrade() bool {
	s.mu.Lock()
	defer s.mu.Unlock()

	if s.faults.StopInUpgrade <= 0 {
		return false
	}

	s.faults.StopInUpgrade--

	return true
}

func (s *Sim) apiFault() error {
	s.mu.Lock()
	rate := s.faults.APIErrorRate
	s.mu.Unlock()

	if rate > 0 && rand.Float64() < rate {
		return status.Error(codes.Unavailable, "lab fault: connection reset by peer")
	}

	return nil
}

func (s *Sim) faultUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := s.apiFault(); err != nil {
		return nil, err
	}

	return h(ctx, req)
}

func (s *Sim) faultStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := s.apiFault(); err != nil {
		return err
	}

	return h(srv, ss)
}
