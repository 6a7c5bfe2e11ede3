package pve

import (
	"context"
	"net/netip"
	"strings"
	"time"
)

// The guest agent endpoints follow qemu-server src/PVE/API2/Qemu/Agent.pm
// and QemuServer/Agent.pm assert_agent_available: no "agent" key is "No
// QEMU guest agent configured", a stopped VM is "VM <vmid> is not running",
// and a VM whose qemu has no agent channel (started with the agent
// disabled) or whose guest runs no agent is "QEMU guest agent is not
// running" (HTTP 500, as go-proxmox's WaitForAgent expects).

// agentLocked returns the agent's answers or PVE's error.
func (s *Server) agentLocked(r *request) (AgentInfo, error) {
	v, err := s.vmLocked(r.p["node"], r.vmid())
	if err != nil {
		return AgentInfo{}, err
	}
	if _, ok := v.conf["agent"]; !ok {
		return AgentInfo{}, fail("No QEMU guest agent configured\n")
	}
	if !v.running {
		return AgentInfo{}, fail("VM %d is not running\n", v.vmid)
	}
	if v.paused {
		return AgentInfo{}, agentPausedLocked(r, v)
	}
	notRunning := fail("QEMU guest agent is not running\n")
	if !s.agentEnabled(v.runConf) || v.guest == nil {
		return AgentInfo{}, notRunning
	}
	if time.Since(v.startedAt) < s.faults.AgentDelay {
		return AgentInfo{}, notRunning
	}
	info, ok := v.guest.Agent()
	if !ok {
		return AgentInfo{}, notRunning
	}
	return info, nil
}

func (s *Server) hAgentIndex(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.vmLocked(r.p["node"], r.vmid()); err != nil {
		return nil, err
	}
	var out []map[string]string
	for _, c := range agentCommands {
		out = append(out, map[string]string{"name": c})
	}
	return out, nil
}

var agentCommands = []string{"fsfreeze-freeze", "fsfreeze-status", "fsfreeze-thaw", "fstrim", "get-fsinfo", "get-host-name", "get-memory-block-info", "get-memory-blocks", "get-osinfo", "get-time", "get-timezone", "get-users", "get-vcpus", "info", "network-get-interfaces", "ping", "shutdown", "suspend-disk", "suspend-hybrid", "suspend-ram"}

// hAgentCommand is the deprecated POST /agent with a "command" parameter.
func (s *Server) hAgentCommand(r *request) (any, error) {
	switch r.p["command"] {
	case "ping":
		return s.hAgentPing(r)
	case "get-osinfo":
		return s.hAgentOSInfo(r)
	case "get-host-name":
		return s.hAgentHostName(r)
	case "network-get-interfaces":
		return s.hAgentInterfaces(r)
	case "info":
		return s.hAgentInfo(r)
	case "shutdown":
		return s.hAgentShutdown(r)
	}
	return nil, fail("lab: guest agent command '%s' is not implemented\n", r.p["command"])
}

func (s *Server) hAgentPing(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.agentLocked(r); err != nil {
		return nil, err
	}
	return map[string]any{"result": map[string]any{}}, nil
}

func (s *Server) hAgentOSInfo(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.agentLocked(r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"result": map[string]any{
		"id": a.OSID, "name": a.OSName, "pretty-name": strings.TrimSpace(a.OSName + " " + a.OSVersion),
		"version": a.OSVersion, "version-id": a.OSVersion, "kernel-release": a.KernelRelease,
		"kernel-version": "#1 SMP PREEMPT_DYNAMIC", "machine": "x86_64",
	}}, nil
}

func (s *Server) hAgentHostName(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.agentLocked(r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"result": map[string]any{"host-name": a.Hostname}}, nil
}

// hAgentInterfaces is guest-network-get-interfaces.
func (s *Server) hAgentInterfaces(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.agentLocked(r)
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, iface := range a.Interfaces {
		addrs := []map[string]any{}
		for _, cidr := range iface.Addresses {
			p, err := netip.ParsePrefix(cidr)
			if err != nil {
				continue
			}
			typ := "ipv4"
			if p.Addr().Is6() {
				typ = "ipv6"
			}
			addrs = append(addrs, map[string]any{"ip-address-type": typ, "ip-address": p.Addr().String(), "prefix": p.Bits()})
		}
		out = append(out, map[string]any{
			"name": iface.Name, "hardware-address": strings.ToLower(iface.MAC), "ip-addresses": addrs,
			"statistics": map[string]any{"rx-bytes": 0, "rx-packets": 0, "tx-bytes": 0, "tx-packets": 0, "rx-errs": 0, "tx-errs": 0, "rx-dropped": 0, "tx-dropped": 0},
		})
	}
	return map[string]any{"result": out}, nil
}

func (s *Server) hAgentInfo(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.agentLocked(r); err != nil {
		return nil, err
	}
	var cmds []map[string]any
	for _, c := range []string{"guest-ping", "guest-get-osinfo", "guest-get-host-name", "guest-network-get-interfaces", "guest-shutdown", "guest-info"} {
		cmds = append(cmds, map[string]any{"name": c, "enabled": true, "success-response": c != "guest-shutdown"})
	}
	return map[string]any{"result": map[string]any{"version": "9.2.0", "supported_commands": cmds}}, nil
}

// hAgentShutdown asks the guest to power down through the agent; qemu exits
// when the guest has.
func (s *Server) hAgentShutdown(r *request) (any, error) {
	s.mu.Lock()
	if _, err := s.agentLocked(r); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	v := s.vms[r.vmid()]
	g := v.guest
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		defer cancel()
		if err := g.Shutdown(ctx); err != nil {
			return
		}
		s.mu.Lock()
		var off Guest
		if v.running && v.guest == g {
			off = s.powerOffLocked(v)
		}
		s.mu.Unlock()
		powerOff(off)
	}()
	return map[string]any{"result": map[string]any{}}, nil
}
