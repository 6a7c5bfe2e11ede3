package talos

import (
	"time"

	"github.com/blang/semver/v4"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
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
// Upgrade, Reboot and Reset are accepted there but start nothing; Shutdown
// and ApplyConfiguration are served, and a reboot or shutdown cancels the
// install (lifecycle, holdInstall).
func (n *Node) stagedInstallBoot(ps *persistState, applied appliedConfig) nextStep {
	s := n.sim

	s.mu.Lock()
	n.gen++ // a boot of its own: requests of the boot before are dropped
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

	if err := n.takeStaged(); err != nil {
		return n.failBoot()
	}

	n.publish()

	if issuer != nil {
		if err := n.startAPIWithIssuer(issuer); err != nil {
			n.logf("apid failed to start", "error", err)
		}
	}

	return n.runStagedUpgrade(ps, *ps.stagedUpgrade)
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
// ApplyConfiguration are served too (v1.14.0-rc.1 v1alpha1_server.go: no
// check of the stage); a shutdown, or the reboot of ApplyConfiguration's
// mode REBOOT (Talos 1.13; 1.14 has no such mode), takes the lock over and
// cancels the install (takeOver, holdInstall).
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

// holdInstall waits out the install of a staged upgrade (its gate, then
// installDuration) in boot gen. A takeover requested in that boot
// (Shutdown, ApplyConfiguration's reboot: takeOver) cancels it: the
// install's Run publishes its error with code CANCELED and no actor (it
// runs with machined's own context: v1alpha1_controller.go Run), and the
// takeover's sequence runs. It returns the step that ends the boot then,
// or done when the install ran to its end.
func (n *Node) holdInstall(gen int) (step nextStep, done bool) {
	gate := n.sim.stagedInstallGate()

	var installed <-chan time.Time
	if gate == nil {
		installed = time.After(n.sim.scaled(installDuration))
	}

	for {
		select {
		case <-n.ctx.Done():
			return stepStop, false
		case <-gate:
			gate, installed = nil, time.After(n.sim.scaled(installDuration))
		case <-installed:
			return stepStop, true
		case ev := <-n.events:
			if ev.gen == gen && (ev.kind == evShutdown || ev.kind == evReboot) {
				return n.cancelInstall(ev), false
			}
		}
	}
}

// cancelInstall ends the install cancelled by ev's sequence. The staged
// upgrade is dropped: machined took it out of META when this boot began
// (v1alpha1_state.go probeMeta), so the next boot boots the installed
// version. machined's main then returns the install's error, and counts
// ten seconds before rebooting (main.go handle): the takeover's sequence,
// which stops no pod in this boot, ends the boot first.
func (n *Node) cancelInstall(ev nodeEvent) nextStep {
	n.logf("install sequence cancelled", "by", ev.kind.sequence())

	if b := n.eventsOf(); b != nil {
		b.publish(&machine.SequenceEvent{
			Sequence: "install",
			Action:   machine.SequenceEvent_NOOP,
			Error:    &common.Error{Code: common.Code_CANCELED, Message: "sequence failed: context canceled"},
		}, "")
	}

	seq := n.startSequence(ev.kind.sequence(), ev.actor)
	seq.phases(shutdownPhases...)

	if ev.kind == evShutdown {
		return stepPowerOff
	}

	return stepReboot
}
