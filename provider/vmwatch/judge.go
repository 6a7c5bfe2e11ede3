package vmwatch

import "time"

// Look is what Proxmox said about a VM at one moment.
type Look struct {
	At time.Time
	// State is "running", "stopped", "paused" or "suspended" (qemu runs,
	// the guest does not), "gone" (no such VM on the host), or "" when
	// Proxmox did not say (its host or the API did not answer).
	State string
	// Lock is the VM's config lock ("backup", "migrate", ...): someone
	// works on it, and a stop-mode backup starts it again afterwards.
	Lock string
	// HAState is the state Proxmox's HA manager gives the VM's service
	// (GET /cluster/resources "hastate"), "" when HA does not manage it.
	HAState string
	// Host is the Proxmox node the VM is on ("" when gone or unknown).
	Host string
	// HostUptime is how long Host has run; 0 unknown.
	HostUptime time.Duration
}

// Policy tunes the decision and the pace of looks.
type Policy struct {
	// Grace is how long a VM must be seen not running, in every look,
	// before it counts as down: a VM restarted by someone comes back
	// within it. Default 30s.
	Grace time.Duration
	// HostBoot: a host up for less than this may not have started its
	// onboot VMs yet (pve-guests.service runs startall after boot, with
	// each VM's startup delay between starts). Default 2m.
	HostBoot time.Duration
	// First is how long a node must have been silent (since its last
	// answer) before its VM is first looked at: a node that misses one
	// attempt mostly answers the next. Default 2s.
	First time.Duration
	// Every is the pause between two looks at one VM, kept across the
	// watchers of one process (Book). With the default Grace, a VM seen
	// stopped in its first look is judged two looks later. Default 15s.
	Every time.Duration
	// Boot: a VM this process started (Source StartedAt) is not looked at
	// for this long after its start while its node has not answered since:
	// firmware, kernel and Talos's API take about 20 s (tests/lab/talos
	// sim.go bootDuration, "realistic"). Default 30s.
	Boot time.Duration
	// Scale multiplies the windows in which the provider expects a node
	// to be silent: Boot and each silence a wait announces (Silent). Not
	// the others: they are about Proxmox (a restart by someone, a host's
	// onboot starts), not about how fast the machines install and boot.
	// A lab whose machines do that in a fraction of real time shortens
	// them (PROXMOXTALOS_VM_WATCH_SCALE, config.WatchScale); slower
	// machines than tests/lab/talos's realistic durations lengthen them.
	// Default 1.
	Scale float64
}

func (p Policy) withDefaults() Policy {
	if p.Grace <= 0 {
		p.Grace = 30 * time.Second
	}

	if p.HostBoot <= 0 {
		p.HostBoot = 2 * time.Minute
	}

	if p.First <= 0 {
		p.First = 2 * time.Second
	}

	if p.Every <= 0 {
		p.Every = 15 * time.Second
	}

	if p.Boot <= 0 {
		p.Boot = 30 * time.Second
	}

	if p.Scale <= 0 {
		p.Scale = 1
	}

	return p
}

// scaled is d, a window of expected silence, multiplied by Scale.
func (p Policy) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * p.Scale)
}

// judge follows one VM's looks.
type judge struct {
	// since is the first look of the current streak of one not-running
	// state; zero: no streak.
	since time.Time
	state string
}

// observe takes a look and says whether the VM is down for good, and for
// how long it has been seen so.
func (j *judge) observe(l Look, p Policy) (down bool, seen time.Duration) {
	switch {
	case l.State == "" || l.State == "running":
		// Unknown (a host that is off may come back and start it) or
		// running: no streak.
		j.since, j.state = time.Time{}, ""

		return false, 0
	case l.Lock != "" && l.State != "gone":
		// A backup, migration or snapshot holds it: it is not ours to
		// judge until the lock is gone.
		j.since, j.state = time.Time{}, ""

		return false, 0
	case l.State != "gone" && haActs(l.HAState):
		// Proxmox's HA manager starts, recovers or moves it: a VM it
		// recovers after a host failure shows stopped for longer than
		// the grace, on a host that has run for long.
		j.since, j.state = time.Time{}, ""

		return false, 0
	}

	if j.since.IsZero() || j.state != l.State {
		j.since, j.state = l.At, l.State
	}

	seen = l.At.Sub(j.since)
	if l.State != "gone" && l.HostUptime > 0 && l.HostUptime < p.HostBoot {
		// The host just booted: its onboot start may still come.
		return false, seen
	}

	return seen >= p.Grace, seen
}

// haActs reports whether the HA manager, in service state s, is to run the
// VM or is moving it, so that a VM seen stopped is not down yet. The states
// are pve-ha-manager's (src/PVE/HA/Manager.pm $valid_service_states):
// "started" (the LRM starts a stopped VM, restarting it up to max_restart
// times, then relocates), "request_start" and "request_start_balance"
// (about to start), "fence" and "recovery" (its host failed: it is started
// on another), "migrate" and "relocate" (moving), "freeze" (its host shuts
// down or is in maintenance: it comes back with it). "stopped",
// "request_stop", "error" (HA gave up) and "disabled" leave it stopped: the
// VM is judged as any other.
func haActs(s string) bool {
	switch s {
	case "started", "request_start", "request_start_balance", "fence", "recovery", "migrate", "relocate", "freeze":
		return true
	}

	return false
}
