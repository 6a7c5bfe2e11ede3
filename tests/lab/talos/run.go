package talos

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/blang/semver/v4"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

// run is the guest's life from power on to power off: boot, and boot again
// after every reboot, like machined's sequencer loop.
func (n *Node) run() {
	defer n.finish()

	for {
		step := n.boot()

		n.stopServers()
		n.leaveRuntime()

		switch step {
		case stepReboot:
			n.setPhase(PhaseRebooting)

			if !n.sim.sleep(n.ctx, rebootDuration) {
				return
			}
		case stepPowerOff:
			n.setPhase(PhaseOff)
			n.cancel()

			go n.host.PoweredOff()

			return
		default:
			return
		}
	}
}

// finish runs when the guest is off: forget runtime state, free the address.
func (n *Node) finish() {
	n.stopServers()
	n.leaveRuntime()

	s := n.sim
	s.mu.Lock()
	n.phase = PhaseOff
	delete(s.nodes, n)
	s.mu.Unlock()

	s.nudge()
	close(n.done)
}

// leaveRuntime drops what only lives while the OS runs (address, active
// config, etcd process, apiserver): it happens on every reboot.
func (n *Node) leaveRuntime() {
	s := n.sim
	s.mu.Lock()

	if n.addr.IsValid() && s.byAddr[n.addr] == n {
		delete(s.byAddr, n.addr)
	}

	if n.rollback != nil {
		n.rollback.Stop()
		n.rollback = nil
	}

	if n.etcd != nil {
		n.etcd.running = false
	}

	n.etcd, n.etcdCluster, n.etcdJoining = nil, nil, false
	ep := n.etcdProc
	n.etcdProc, n.etcdRetryAt = nil, time.Time{}
	n.addr = netip.Addr{}
	n.active, n.activeBytes = nil, nil
	n.apiReadyAt = time.Time{}
	n.bootedAt = time.Time{}
	s.mu.Unlock()

	// The real member dies with the OS; its data stays on the disk.
	if ep != nil {
		ep.kill()
		if out := ep.p.lastLines(20); out != "" { // etcd logs warnings only
			s.log.Info("etcd stopped", "member", ep.name, "output", out)
		}
	}

	s.nudge()
}

// boot is one boot of the machine, until it reboots or powers off.
func (n *Node) boot() nextStep {
	n.setPhase(PhaseBooting)

	if !n.sim.sleep(n.ctx, bootDuration) {
		return stepStop
	}

	s := n.sim

	s.mu.Lock()
	m := cloneMachine(n.machine)
	s.mu.Unlock()

	choice := chooseBoot(m)

	var ps *persistState

	switch choice.kind {
	case bootNothing:
		n.logf("firmware found nothing to boot", "reason", choice.why)
		n.setPhase(PhaseNoBoot)
		<-n.ctx.Done()

		return stepStop
	case bootISO:
		if d, ok := installedDisk(m); ok && haltsIfInstalled(choice.image) {
			return n.haltInstalled(d)
		}
	case bootDiskImage:
		// A Talos disk image is an installed system without a config yet.
		ps = &persistState{disk: choice.disk, image: choice.image, nodeID: newNodeID()}
	case bootInstalled:
		ps = s.loadState(choice.token)
		if ps == nil {
			n.logf("the system disk holds a Talos installation this lab did not write; treating it as a fresh disk image", "disk", choice.disk)

			ps = &persistState{disk: choice.disk, image: choice.image, nodeID: newNodeID()}
		}

		if ps.stagedUpgrade != nil && !apidBeforeInstall(ps.image.Version) {
			s.mu.Lock()
			n.ps = ps
			n.gen++                  // a boot of its own, without the API
			n.seqRunning = "install" // the install sequence holds machined's lock
			s.mu.Unlock()

			if err := n.takeStaged(); err != nil {
				return n.failBoot()
			}

			return n.runStagedUpgrade(ps, *ps.stagedUpgrade)
		}
	}

	img := choice.image
	if ps != nil {
		img = ps.image
	}

	extensions, known := s.catalog.Lookup(img.Schematic)
	if !known {
		n.logf("unknown Image Factory schematic: assuming no extensions (register it on the lab's catalog)", "schematic", img.Schematic)
	}

	addr, why := nodeAddress(m, img.Platform)

	s.mu.Lock()
	n.image, n.extensions, n.ps = img, extensions, ps
	n.hostname = platformHostname(m)

	if addr.IsValid() {
		if other := s.byAddr[addr]; other != nil && other != n {
			why = fmt.Sprintf("address %s is already used by VM %q (duplicate address)", addr, other.machine.Name)
			addr = netip.Addr{}
		} else {
			s.byAddr[addr] = n
		}
	}

	n.addr = addr
	s.mu.Unlock()

	if err := n.newBootResources(); err != nil {
		n.logf("node resources failed", "error", err)
		<-n.ctx.Done()

		return stepStop
	}

	n.logf("booted", "image", img.String())

	if !addr.IsValid() {
		n.logf("node is unreachable from the lab", "reason", why)
	}

	if ps == nil || ps.config == nil {
		return n.maintenance(ps)
	}

	// The stored config may come from a newer Talos (after a downgrade):
	// this release's decoder must know every document and field in it.
	err := checkConfigKnown(ps.config, img.Version)

	var cfg config.Provider
	if err == nil {
		cfg, err = configloader.NewFromBytes(ps.config)
	}

	if err != nil {
		n.logf("stored machine config does not load; the node cannot come up", "error", err)
		<-n.ctx.Done()

		return stepStop
	}

	if ps.stagedUpgrade != nil {
		return n.stagedInstallBoot(ps, appliedConfig{cfg: cfg, bytes: ps.config})
	}

	return n.configured(ps, appliedConfig{cfg: cfg, bytes: ps.config})
}

// maintenance waits for a config over the maintenance API, then installs
// (live ISO) or goes on booting (installed system without a config).
func (n *Node) maintenance(ps *persistState) nextStep {
	if err := n.startMaintenance(); err != nil {
		n.logf("maintenance service failed to start", "error", err)
	}

	n.setPhase(PhaseMaintenance)

	var applied appliedConfig

	select {
	case <-n.ctx.Done():
		return stepStop
	case applied = <-n.applyCh:
	}

	if ps != nil {
		// Already installed (disk image): persist the config and go on
		// booting, without a reboot. Only the maintenance service stops;
		// this boot's resources stay and apid starts as configured
		// (machined's boot sequence goes on: install is skipped when
		// Installed(), v1alpha1_sequencer.go Install).
		n.stopMaintenance()

		ps = ps.clone()
		ps.config = applied.bytes

		if err := n.persist(ps); err != nil {
			n.logf("writing the config to the system disk failed", "error", err)

			return n.failBoot()
		}

		return n.configured(ps, applied)
	}

	// The maintenance service stops once a config is accepted; the node
	// installs and reboots.
	n.stopServers()

	return n.install(applied)
}

// install is machined's Install task followed by a reboot.
func (n *Node) install(applied appliedConfig) nextStep {
	n.setPhase(PhaseInstalling)

	if !n.sim.sleep(n.ctx, installDuration) {
		return stepStop
	}

	ps, err := n.installTarget(applied.cfg)
	if err != nil {
		n.logf("install failed", "error", err)

		return n.failBoot()
	}

	ps.config = applied.bytes

	if err := n.persist(ps); err != nil {
		n.logf("install failed", "error", err)

		return n.failBoot()
	}

	n.logf("install successful", "disk", ps.disk, "image", ps.image.String())

	return stepReboot
}

// installTarget resolves the install disk and installer image of a config,
// as machined's Install task does (internal/app/machined/pkg/runtime/v1alpha1/
// v1alpha1_sequencer_tasks.go): a disk selector must match a disk, a static
// disk path must exist (filepath.EvalSymlinks fails otherwise), and the
// installer image must be pullable.
func (n *Node) installTarget(cfg config.Provider) (*persistState, error) {
	s := n.sim

	s.mu.Lock()
	m := cloneMachine(n.machine)
	running := n.image
	s.mu.Unlock()

	devs, err := linuxDevices(m.Disks)
	if err != nil {
		return nil, err
	}

	var target *blockDevice

	install := cfg.Machine().Install()

	expr, err := install.DiskMatchExpression()
	if err != nil {
		return nil, fmt.Errorf("failed to get disk match expression: %w", err)
	}

	switch {
	case expr != nil:
		matched, err := matchDisks(devs, expr)
		if err != nil {
			return nil, err
		}

		if len(matched) == 0 {
			return nil, fmt.Errorf("no disks matched the expression: %s", expr)
		}

		target = &matched[0]
	default:
		path := install.Disk()
		for i := range devs {
			if "/dev/"+devs[i].DevName == path {
				target = &devs[i]
			}
		}

		if target == nil {
			return nil, fmt.Errorf("lstat %s: no such file or directory", filepath.Clean("/"+path))
		}
	}

	ref := install.Image()
	if ref == "" {
		ref = "ghcr.io/siderolabs/installer:" + running.Version
	}

	img, err := ParseInstallerRef(ref)
	if err == nil {
		err = s.pull(ref)
	}

	if err != nil {
		return nil, fmt.Errorf("error pulling installer image %q: %w", ref, err)
	}

	img = installedPlatform(img, running, install.GrubUseUKICmdline() || m.UEFI)

	return &persistState{disk: target.Name, image: img, nodeID: newNodeID()}, nil
}

// installedPlatform: with UKI command lines (UEFI, or GRUB with
// grubUseUKICmdline, the 1.12 default) the kernel arguments, including
// talos.platform, come from the installer image, so a metal installer on a
// nocloud VM turns it into a metal node. Legacy GRUB keeps the running
// platform (cmd/installer/pkg/install/install.go).
func installedPlatform(img, running Image, ukiCmdline bool) Image {
	if !ukiCmdline {
		img.Platform = running.Platform
	}

	return img
}

// failBoot is machined's handling of a failed boot sequence: log, wait ten
// seconds, reboot (internal/app/machined/main.go, handle). The countdown
// lasts failPauseFloor at least at any time scale: the node still serves
// its API and the failed sequence's events then, which a client that
// follows them (talosctl's action tracker, the provider's waits) reads
// within the countdown on a real node; scaled to nothing, the boot and its
// events were gone before such a client had connected.
func (n *Node) failBoot() nextStep {
	n.logf("boot sequence failed: rebooting in 10 seconds")

	if !sleepCtx(n.ctx, max(n.sim.scaled(installFailPause), failPauseFloor)) {
		return stepStop
	}

	return stepReboot
}

// takeStaged takes the staged upgrade out of the installed state as
// machined takes it out of META when it starts, before apid serves
// (v1alpha1_state.go probeMeta).
func (n *Node) takeStaged() error {
	err := n.updateState(func(ps *persistState) { ps.stagedUpgrade = nil })
	if err != nil {
		n.logf("staged upgrade failed", "error", err)
	}

	return err
}

// runStagedUpgrade applies an upgrade staged in META: the install runs early
// in boot (machined's install sequence runs when IsInstallStaged,
// v1alpha1_sequencer.go Install), then the node reboots into the new
// version. machined takes the staged upgrade out of META as the boot
// begins (v1alpha1_state.go probeMeta, v1.12.9 to v1.14.0-rc.1), so that a
// failed install does not loop, and an upgrade staged during this boot
// (Talos 1.13+ answers there) is kept for the next one.
// ps is the boot's state as read; takeStaged has cleared the staged upgrade
// on disk.
func (n *Node) runStagedUpgrade(ps *persistState, staged Image) nextStep {
	n.sim.mu.Lock()
	gen := n.gen
	n.sim.mu.Unlock()

	n.setPhase(PhaseInstalling)

	if step, done := n.holdInstall(gen); !done {
		return step
	}

	// A staged image that cannot be pulled, or whose installer's pre-flight
	// refuses the upgrade: the upgrade is dropped and the node boots its
	// installed version.
	err := n.sim.pull(staged.Source)
	if err != nil {
		err = fmt.Errorf("error pulling installer image %q: %w", staged.Source, err)
	} else {
		err = stagedPreflight(ps, staged.Version)
	}

	if err == nil {
		err = n.updateState(func(ps *persistState) { ps.image = staged })
	}

	if err != nil {
		n.logf("staged upgrade failed", "error", err)

		return n.failBoot()
	}

	n.logf("staged upgrade successful", "image", staged.String())

	return stepReboot
}

// haltInstalled: ISOs of Talos 1.8+ carry talos.halt_if_installed=1
// (pkg/imager/imager.go): booted while Talos is installed on a disk, they
// halt and say so every 30 s until the boot times out (70 min), then reboot
// (v1alpha1_sequencer_tasks.go haltIfInstalled).
func (n *Node) haltInstalled(disk string) nextStep {
	n.setPhase(PhaseBooting)

	const msg = "Talos is already installed to disk but booted from another media and talos.halt_if_installed kernel parameter is set. Please reboot from the disk."

	timeout := n.sim.scaled(70 * time.Minute)
	if timeout == 0 {
		// At time scale 0 the halt lasts until the VM stops (no busy loop).
		n.logf(msg, "disk", disk)
		<-n.ctx.Done()

		return stepStop
	}

	deadline := time.Now().Add(timeout)

	for {
		n.logf(msg, "disk", disk)

		if !n.sim.sleep(n.ctx, 30*time.Second) {
			return stepStop
		}

		if time.Now().After(deadline) {
			return n.failBoot()
		}
	}
}

func haltsIfInstalled(iso Image) bool {
	v, err := semver.ParseTolerant(iso.Version)

	return err == nil && v.GTE(semver.MustParse("1.8.0"))
}

func installedDisk(m Machine) (string, bool) {
	for _, d := range m.Disks {
		if _, _, err := parseDiskContent(d.Content); err == nil {
			return d.Name, true
		}
	}

	return "", false
}

func newNodeID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)

	return hex.EncodeToString(b)
}

// platformHostname is the hostname the platform (cloud-init) gives.
func platformHostname(m Machine) string {
	if m.CloudInit != nil {
		return m.CloudInit.Hostname
	}

	return ""
}
