package talos

import (
	"github.com/blang/semver/v4"

	"github.com/siderolabs/talos/pkg/machinery/config"
)

// apidBeforeInstall says whether a Talos version starts apid in its
// initialize sequence, before the install sequence runs, so that a boot
// that installs a staged upgrade answers the API: since "feat: unify
// maintenance and regular APIs" (siderolabs/talos b7d70cf62, v1.13.0;
// v1.14.0-rc.1 internal/app/machined/pkg/runtime/v1alpha1/
// v1alpha1_sequencer.go Initialize, earlyServices: StartApid). Before,
// machined started apid after the install sequence (v1.12.0
// internal/app/machined/main.go: Run(SequenceInstall), then
// LoadAndStart(&services.APID{})), so that boot answers nothing.
func apidBeforeInstall(version string) bool {
	v, err := semver.ParseTolerant(version)

	return err == nil && (v.Major > 1 || v.Minor >= 13)
}

// stagedInstallBoot is the boot that installs a staged upgrade on a version
// that starts apid first (apidBeforeInstall). The config is loaded (the
// initialize sequence's LoadConfig) and apid serves with it over mTLS once
// its certificate is there (APIServiceConfigController: the regular API when
// no maintenance is requested), so the node answers with the version it
// boots (the old one), this boot's ID, and stage booting, then installing
// (controllers/runtime/machine_status.go: the install phase of the install
// sequence). No service of the boot sequence (etcd, kubelet) runs: the lab
// keeps the node out of stage running, which is what starts them here.
// Upgrade, Reboot and Reset are accepted there but start nothing
// (lifecycle); ApplyConfiguration and Shutdown still answer "node is not
// running".
func (n *Node) stagedInstallBoot(ps *persistState, applied appliedConfig) nextStep {
	s := n.sim

	s.mu.Lock()
	n.ps = ps
	n.seqRunning = "install" // the install sequence holds machined's lock (lifecycle)
	n.active, n.activeBytes = applied.cfg, applied.bytes
	n.hostname = configHostname(applied.cfg, n.machine, ps, n.addr)

	// A worker's certificate comes from trustd on a control plane, as in
	// any boot (reconcileWorkerCerts).
	var issuer config.Provider
	if isControlPlane(applied.cfg) {
		issuer = applied.cfg
	} else if t := s.trustdFor(n); t != nil {
		issuer = t.active
	}
	s.mu.Unlock()

	n.publish()

	if issuer != nil {
		if err := n.startAPIWithIssuer(issuer); err != nil {
			n.logf("apid failed to start", "error", err)
		}
	}

	return n.runStagedUpgrade(ps)
}

// stagedInstallGate is the channel that holds a staged install (Faults).
func (s *Sim) stagedInstallGate() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.faults.StagedInstallGate
}

// lifecycle is current() for the calls that start a sequence (Upgrade,
// Reset, Reboot), which machined also accepts in the boot that installs a
// staged upgrade: its install sequence runs there (v1.14.0-rc.1 machined
// main.go: Run(SequenceInstall) after Initialize) and holds the lock, so
// the call is answered and its sequence refused (request, seqlock.go:
// sequenceTakeOver has no entry for install, and these calls ask for no
// takeover: v1alpha1_server.go Upgrade, Reset, Reboot). Shutdown and
// ApplyConfiguration's reboot ask for a takeover, which cancels the
// install: the lab does not simulate that and refuses them in this boot.
func (m *machined) lifecycle() (config.Provider, error) {
	n := m.node

	n.sim.mu.Lock()
	installing := n.phase == PhaseInstalling && n.seqRunning == "install"
	cfg := n.active
	n.sim.mu.Unlock()

	if installing {
		return cfg, nil
	}

	return m.current()
}
