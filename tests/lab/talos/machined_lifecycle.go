package talos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// Upgrade validates the installer image and, on control planes, that etcd
// can lose this member for a while, then upgrades asynchronously (or stages
// the upgrade for the next reboot), as v1alpha1_server.go Upgrade does.
func (m *machined) Upgrade(ctx context.Context, in *machine.UpgradeRequest) (*machine.UpgradeResponse, error) {
	n := m.node
	s := n.sim

	cfg, err := m.lifecycle()
	if err != nil {
		return nil, err
	}

	n.logf("upgrade request received", "image", in.GetImage(), "staged", in.GetStage(), "force", in.GetForce())

	img, err := ParseInstallerRef(in.GetImage())
	if err != nil {
		return nil, fmt.Errorf("error validating installer image %q: %w", in.GetImage(), err)
	}

	// v1.12.5 pulls the installer within the call (install.
	// PullAndValidateInstallerImage): an image that cannot be pulled is the
	// call's error, and nothing happens to the node.
	if err := s.pull(in.GetImage()); err != nil {
		return nil, fmt.Errorf("error validating installer image %q: %w", in.GetImage(), err)
	}

	s.mu.Lock()
	running := n.image
	uefi := n.machine.UEFI
	s.mu.Unlock()

	// Talos's pre-upgrade etcd check asks the members (etcdupgrade.go),
	// outside sim.mu. force skips it; so does preserve on the releases that
	// read it (skipsEtcdCheckOnPreserve).
	if isControlPlane(cfg) && !in.GetForce() && !(in.GetPreserve() && skipsEtcdCheckOnPreserve(running.Version)) {
		if err := n.validateForUpgrade(ctx); err != nil {
			return nil, err
		}
	}

	img = installedPlatform(img, running, cfg.Machine().Install().GrubUseUKICmdline() || uefi)
	actor := uuid.New().String()

	if in.GetStage() {
		if err := n.updateState(func(ps *persistState) { ps.stagedUpgrade = &img }); err != nil {
			return nil, fmt.Errorf("error adding staged upgrade image ref tag: %w", err)
		}

		n.request("stageUpgrade", nodeEvent{kind: evReboot, actor: actor})
	} else {
		n.request("upgrade", nodeEvent{kind: evUpgrade, image: img, actor: actor})
	}

	return &machine.UpgradeResponse{Messages: []*machine.Upgrade{{Ack: "Upgrade request received", ActorId: actor}}}, nil
}

// Reset validates the request and resets asynchronously
// (v1alpha1_server.go Reset, v1alpha1_sequencer.go Reset).
func (m *machined) Reset(_ context.Context, in *machine.ResetRequest) (*machine.ResetResponse, error) {
	n := m.node
	s := n.sim

	if _, err := m.lifecycle(); err != nil {
		return nil, err
	}

	actor := uuid.New().String()
	n.logf("reset request received", "actor", actor, "graceful", in.GetGraceful(), "reboot", in.GetReboot())

	req := resetRequest{graceful: in.GetGraceful(), reboot: in.GetReboot(), wipeSys: in.GetMode() != machine.ResetRequest_USER_DISKS}

	if len(in.GetUserDisksToWipe()) > 0 {
		if in.GetMode() == machine.ResetRequest_SYSTEM_DISK {
			return nil, errors.New("reset failed: invalid input, wipe mode SYSTEM_DISK doesn't support UserDisksToWipe parameter")
		}

		s.mu.Lock()
		devs, _ := linuxDevices(n.machine.Disks)
		system := ""

		if n.ps != nil {
			system = n.ps.disk
		}
		s.mu.Unlock()

		for _, path := range in.GetUserDisksToWipe() {
			i := slices.IndexFunc(devs, func(d blockDevice) bool { return "/dev/"+d.DevName == path })
			if i < 0 {
				return nil, fmt.Errorf("reset user disk failed: device %s wasn't found", path)
			}

			if devs[i].Name == system {
				return nil, fmt.Errorf("reset user disk failed: device %s is the system disk", path)
			}

			req.userDisks = append(req.userDisks, devs[i].Name)
		}
	}

	if len(in.GetSystemPartitionsToWipe()) > 0 {
		if in.GetMode() == machine.ResetRequest_USER_DISKS {
			return nil, errors.New("reset failed: invalid input, wipe mode USER_DISKS doesn't support SystemPartitionsToWipe parameter")
		}

		for _, p := range in.GetSystemPartitionsToWipe() {
			switch p.GetLabel() {
			case "STATE", "EPHEMERAL", "META":
				if p.GetWipe() {
					req.partitions = append(req.partitions, p.GetLabel())
				}
			default:
				return nil, status.Errorf(codes.Unknown, "failed to get volume status with label %q: resource VolumeStatuses.block.talos.dev(runtime/%s@undefined) doesn't exist", p.GetLabel(), p.GetLabel())
			}
		}

		req.wipeSys = false
	}

	n.request("reset", nodeEvent{kind: evReset, reset: req, actor: actor})

	return &machine.ResetResponse{Messages: []*machine.Reset{{ActorId: actor}}}, nil
}

// configured runs a configured node until it reboots or powers off.
func (n *Node) configured(ps *persistState, applied appliedConfig) nextStep {
	s := n.sim

	s.mu.Lock()
	n.gen++
	n.ps = ps
	n.active, n.activeBytes = applied.cfg, applied.bytes
	n.hostname = configHostname(applied.cfg, n.machine, ps, n.addr)
	n.phase = PhaseRunning
	n.bootedAt = nowFunc()
	n.seqRunning = "" // a new boot: its boot sequence has ended
	s.checkSkew(applied.cfg.Cluster().ID())
	n.etcdFailedLogged = false
	gen := n.gen
	cp := isControlPlane(applied.cfg)
	s.mu.Unlock()

	n.publish()

	if cp {
		if err := n.startAPI(); err != nil {
			n.logf("apid failed to start", "error", err)
		}
	} else {
		n.logf("worker apid waits for a certificate from trustd on a control plane (reached through the control plane endpoint)")
	}

	s.nudge()
	s.nudgeAfter(criDuration)

	if cp {
		// the join starts at its own time, not at the next reconcile tick
		s.nudgeAfter(etcdFirstJoin(n.machine.Name))
	}

	for {
		var ev nodeEvent

		select {
		case <-n.ctx.Done():
			return stepStop
		case ev = <-n.events:
		}

		if ev.gen != gen {
			continue // requested during an earlier boot
		}

		switch ev.kind {
		case evReboot:
			seq := n.startSequence("reboot", ev.actor)
			n.drain()
			n.stopKubelet()
			seq.phases(shutdownPhases...)

			return stepReboot
		case evShutdown:
			seq := n.startSequence("shutdown", ev.actor)
			n.setPhase(PhaseShuttingDown)
			n.drain()
			n.stopKubelet()
			seq.phases(shutdownPhases...)

			return stepPowerOff
		case evUpgrade:
			return n.upgrade(ev.image, n.startSequence("upgrade", ev.actor))
		case evReset:
			if step, ok := n.reset(ev.reset, n.startSequence("reset", ev.actor)); ok {
				return step
			}
		}
	}
}

// drain cordons the Kubernetes node (Talos drains before reboots,
// upgrades and graceful resets; it uncordons when it is back). Source:
// siderolabs/talos v1.12.5 v1alpha1_sequencer.go (Reset runs "drain" first
// when graceful, for workers and control planes alike; Upgrade always) and
// controllers/k8s/node_cordoned_spec.go (cordoned while shutting down,
// upgrading or resetting).
func (n *Node) drain() {
	n.throughKube(func(kn *kubeNode) { kn.unschedulable = true }, func(kn *kubeNode) bool { return kn.cordoned })
}

// stopKubelet shuts the kubelet down gracefully before the services stop:
// Talos signals the shutdown over its logind stand-in and waits for the
// kubelet's inhibitor lock (StopAllPods and RemoveAllPods, which reboot,
// shutdown, upgrade and reset all run: v1alpha1_sequencer_tasks.go
// stopAndRemoveAllPods, DBus().WaitShutdown). Talos enables the kubelet's
// graceful node shutdown, whose Ready condition then says "node is shutting
// down" (kubelet pkg/kubelet/nodeshutdown); the lock is released after it
// posted that.
func (n *Node) stopKubelet() {
	n.throughKube(func(kn *kubeNode) { kn.shuttingDown = kn.bootedAt }, func(kn *kubeNode) bool { return kn.apiReady == "False" })
}

// throughKube changes what the node's kubelet or Talos's controllers post
// about it (sim.mu held) and waits until the API holds it (done, sim.mu
// held). With the API unreachable Talos gives up after a while and goes on
// all the same.
func (n *Node) throughKube(change func(*kubeNode), done func(*kubeNode) bool) {
	s := n.sim

	s.mu.Lock()

	var (
		kn    *kubeNode
		agent *kubeAgent
		c     *cluster
	)

	if n.active != nil {
		c = s.clusters[n.active.Cluster().ID()]
	}

	if c != nil {
		agent = c.agent

		for _, k := range c.kubeNodes {
			if k.node == n {
				change(k)
				kn = k
			}
		}
	}
	s.mu.Unlock()

	if kn == nil || agent == nil {
		return
	}

	agent.nudge()

	deadline := time.Now().Add(10 * time.Second)

	for time.Now().Before(deadline) && n.ctx.Err() == nil {
		s.mu.Lock()
		ok := done(kn) || c.kube == nil
		s.mu.Unlock()

		if !ok {
			_, serving := c.kube.serving()
			ok = !serving
		}

		if ok {
			return
		}

		time.Sleep(20 * time.Millisecond)
	}
}

// upgrade is the upgrade sequence: drain, install the new image onto the
// system disk (etcd data and config are kept), reboot into it.
func (n *Node) upgrade(img Image, seq *sequence) nextStep {
	n.setPhase(PhaseUpgrading)
	seq.phases(sequencePhase{"drain", "cordonAndDrainNode"})
	n.drain()
	n.stopKubelet()
	seq.phases(upgradePhases...)

	if n.sim.takeStopInUpgrade() {
		n.logf("lab fault: the VM stops in the middle of the upgrade's install")

		return stepPowerOff
	}

	if !n.sim.sleep(n.ctx, installDuration) {
		return stepStop
	}

	// The installer was pulled by the Upgrade call ("We pull the installer
	// image when we receive an upgrade request", v1alpha1_sequencer_tasks.go
	// Upgrade). Its pre-flight runs before anything is written: a refusal
	// leaves the installed version, and the failed sequence reboots into it
	// (machined main.go handle).
	n.sim.mu.Lock()
	host, cfg := n.image.Version, n.active
	n.sim.mu.Unlock()

	if err := upgradePreflight(host, img.Version, cfg); err != nil {
		n.logf("upgrade failed", "error", err)
		seq.fail(err)

		return n.failBoot()
	}

	if err := n.updateState(func(ps *persistState) { ps.image = img }); err != nil {
		n.logf("upgrade failed", "error", err)
		seq.fail(err)

		return n.failBoot()
	}

	n.logf("upgrade successful", "image", img.String())
	seq.phases(sequencePhase{"meta", "reloadMeta"}, sequencePhase{"kexec", "kexecPrepare"}, sequencePhase{"stopEverything", "stopAllServices"})

	return stepReboot
}

// reset is the reset sequence. A failure to leave etcd aborts it and the
// node keeps running (ok=false), as the sequence error only gets logged.
func (n *Node) reset(req resetRequest, seq *sequence) (nextStep, bool) {
	s := n.sim

	s.mu.Lock()
	cp := isControlPlane(n.active)
	hasEtcd := n.etcd != nil && n.etcd.running
	systemDisk := ""

	if n.ps != nil {
		systemDisk = n.ps.disk
	}
	s.mu.Unlock()

	n.setPhase(PhaseResetting)

	if req.graceful {
		n.drain()
	}

	n.stopKubelet()

	if req.graceful {
		if cp && hasEtcd {
			if err := n.leaveEtcd(n.ctx); err != nil {
				n.logf("reset failed", "error", err)
				seq.fail(err)
				n.setPhase(PhaseRunning)
				n.sequenceEnded("reset")

				return stepStop, false
			}
		}
	}

	wipe := []string{}
	if req.wipeSys && systemDisk != "" {
		wipe = append(wipe, systemDisk)
	}

	wipe = append(wipe, req.userDisks...)

	for _, d := range wipe {
		if err := n.wipe(d); err != nil {
			n.logf("reset failed", "error", err)

			return n.failBoot(), true
		}
	}

	if req.wipeSys && systemDisk != "" || slices.Contains(req.partitions, "EPHEMERAL") {
		// The etcd data went with the wipe: this member never runs again,
		// and its cluster ends if it was the last (quorum.go).
		s.mu.Lock()
		if n.etcd != nil {
			n.etcd.wiped = true
		}

		ep, dir := n.etcdProc, ""
		n.etcdProc = nil

		if n.ps != nil {
			dir = n.ps.etcdData
		}
		s.mu.Unlock()

		ep.kill()
		removeEtcdData(dir)
	}

	if len(req.partitions) > 0 && systemDisk != "" {
		err := n.updateState(func(ps *persistState) {
			for _, label := range req.partitions {
				switch label {
				case "STATE":
					ps.config = nil
				case "EPHEMERAL":
					ps.etcdCluster, ps.etcdMember, ps.etcdData = 0, 0, ""
				case "META":
					ps.stagedUpgrade = nil
				}
			}
		})
		if err != nil {
			n.logf("reset failed", "error", err)

			return n.failBoot(), true
		}
	}

	n.logf("reset done", "wiped", fmt.Sprint(wipe), "partitions", fmt.Sprint(req.partitions))
	seq.phases(sequencePhase{"stopEverything", "stopAllServices"})

	if req.reboot {
		return stepReboot, true
	}

	return stepPowerOff, true
}
