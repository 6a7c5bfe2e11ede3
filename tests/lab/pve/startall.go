package pve

import (
	"context"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A node that boots starts its guests marked onboot=1, as PVE's
// pve-guests.service does (pve-manager services/pve-guests.service runs
// `pvesh create /nodes/localhost/startall`): pve-manager PVE/API2/Nodes.pm
// startall forks a "startall" worker that starts them in their
// startup-order (startup: order=N, lowest first, unordered last, then by
// VMID), each with its own qmstart task, waiting the VM's startup "up"
// delay (3 s for a VM without one) before the next. A start that fails is
// logged and the worker goes on.

// startAllLocked starts the startall worker of node n. Called with s.mu
// held, when n is back online.
func (s *Server) startAllLocked(n *node) {
	type entry struct {
		vmid, order int
		up          time.Duration
	}
	var list []entry
	for id, v := range s.vms {
		if v.node != n.spec.Name || !truthyConf(v.conf["onboot"]) {
			continue
		}
		e := entry{vmid: id, order: math.MaxInt, up: 3 * time.Second}
		if o, ok := startupValue(v.conf["startup"], "order"); ok {
			e.order = o
		}
		if u, ok := startupValue(v.conf["startup"], "up"); ok {
			e.up = time.Duration(u) * time.Second
		}
		list = append(list, e)
	}
	if len(list) == 0 {
		return
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].order != list[j].order {
			return list[i].order < list[j].order
		}
		return list[i].vmid < list[j].vmid
	})
	name := n.spec.Name
	s.startTask(name, "startall", "", "root@pam", func(ctx context.Context, l *taskLog) error {
		var started []*task
		for _, e := range list {
			s.mu.Lock()
			v, ok := s.vms[e.vmid]
			var t *task
			if ok && !v.running && v.node == name {
				l.Logf("Starting VM %d", e.vmid)
				t = s.tasks[s.startTask(name, "qmstart", strconv.Itoa(e.vmid), "root@pam",
					func(ctx context.Context, tl *taskLog) error { return s.startVM(ctx, tl, v, false) })]
			}
			s.mu.Unlock()
			if t == nil {
				continue
			}
			started = append(started, t)
			if err := s.sleep(ctx, e.up); err != nil {
				return err
			}
		}
		for _, t := range started {
			if err := t.wait(ctx); err != nil {
				return err
			}
			s.mu.Lock()
			exit, id := t.exit, t.id
			s.mu.Unlock()
			if !taskOK(exit) {
				l.Logf("Starting VM %s failed: %s", id, exit)
			}
		}
		return nil
	})
	s.logf("node %s: starting its onboot VMs", name)
}

func truthyConf(v string) bool { return v == "1" || v == "on" || v == "yes" || v == "true" }

// taskOK reads an exit status as pve-common UPID.pm status_is_error does.
func taskOK(exit string) bool {
	return exit == "OK" || strings.HasPrefix(exit, "WARNINGS: ")
}

// startupValue reads one key of a startup order, "[[order=]N][,up=N][,down=N]"
// (pve-common PVE/JSONSchema.pm pve_parse_startup_order).
func startupValue(startup, key string) (int, bool) {
	for _, part := range strings.Split(startup, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			k, v = "order", k
		}
		if k == key {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}
