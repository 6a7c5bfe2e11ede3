package talos

import (
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// serviceState is one system service as ServiceList reports it.
type serviceState struct {
	id          string
	state       string // Running, Preparing, Waiting, Failed, ...
	healthy     bool
	healthKnown bool
	msg         string
	// since is when the service entered its state in this boot: Talos
	// stamps each service event with the time it happened
	// (internal/app/machined/pkg/system/service_events.go), and a client
	// compares it with what the service did since (a kubelet's status).
	since time.Time
}

// nodeServices lists a configured node's services (sim.mu held): the
// always-on system services, etcd and trustd on control planes, kubelet,
// apid once it has certificates, and extension services.
func (s *Sim) nodeServices(n *Node) []serviceState {
	if n.active == nil {
		return nil
	}

	now := time.Now()
	cp := isControlPlane(n.active)
	criAt := n.bootedAt.Add(s.scaled(criDuration))
	criUp := !now.Before(criAt)

	running := func(id string) serviceState {
		return serviceState{id: id, state: "Running", healthy: true, healthKnown: true, msg: "Health check successful", since: n.bootedAt}
	}
	// The CRI and the kubelet, which waits for it, run from criAt on.
	runningFromCRI := func(id string) serviceState {
		st := running(id)
		st.since = criAt

		return st
	}

	out := []serviceState{running("auditd"), running("containerd"), running("dashboard"), running("machined"), running("syslogd"), running("udevd")}

	if criUp {
		out = append(out, runningFromCRI("cri"))
	} else {
		out = append(out, serviceState{id: "cri", state: "Preparing", msg: "Running pre state"})
	}

	switch {
	case n.servers != nil && n.servers.apid != nil:
		out = append(out, running("apid"))
	default:
		out = append(out, serviceState{id: "apid", state: "Preparing", msg: "Waiting for service \"containerd\" to be \"up\", api certificates"})
	}

	if cp {
		out = append(out, running("trustd"))

		switch {
		case n.etcd != nil && n.etcd.running && n.etcdCluster.hasQuorum():
			out = append(out, running("etcd"))
		case n.etcd != nil && n.etcd.running:
			out = append(out, serviceState{id: "etcd", state: "Running", healthKnown: true, msg: "Health check failed: etcdserver: no leader"})
		case n.ps != nil && n.ps.etcdMember != 0 && n.etcdFailedLogged:
			out = append(out, serviceState{id: "etcd", state: "Failed", healthKnown: true, msg: "Condition failed: member was removed from the cluster"})
		default:
			out = append(out, serviceState{id: "etcd", state: "Preparing", msg: "Running pre state"})
		}
	}

	if criUp {
		out = append(out, runningFromCRI("kubelet"))
	} else {
		out = append(out, serviceState{id: "kubelet", state: "Waiting", msg: "Waiting for service \"cri\" to be \"up\""})
	}

	for _, ext := range n.extensions {
		if name, ok := extensionService(ext); ok {
			out = append(out, running("ext-"+name))
		}
	}

	for i := range out {
		if out[i].since.IsZero() {
			out[i].since = n.bootedAt // waiting since the boot
		}
	}

	slices.SortFunc(out, func(a, b serviceState) int { return strings.Compare(a.id, b.id) })

	return out
}

// extensionService names the service an extension runs, if any.
func extensionService(ext string) (string, bool) {
	switch ext {
	case QemuGuestAgent:
		return "qemu-guest-agent", true
	case "siderolabs/iscsi-tools":
		return "iscsid", true
	case "siderolabs/tailscale":
		return "tailscale", true
	case "siderolabs/nut-client":
		return "nut-client", true
	case "siderolabs/lldpd":
		return "lldpd", true
	default:
		return "", false
	}
}

func (svc serviceState) proto() *machine.ServiceInfo {
	ts := timestamppb.Now()
	if !svc.since.IsZero() {
		ts = timestamppb.New(svc.since)
	}

	events := []*machine.ServiceEvent{{Msg: svc.msg, State: svc.state, Ts: ts}}
	if svc.state == "Running" {
		// A service's run begins with Preparing events, then Running
		// (internal/app/machined/pkg/system/service_runner.go Run): a
		// client tells the run's start by the change into Running.
		events = append([]*machine.ServiceEvent{{Msg: "Creating service runner", State: "Preparing", Ts: ts}}, events...)
	}

	return &machine.ServiceInfo{
		Id:     svc.id,
		State:  svc.state,
		Events: &machine.ServiceEvents{Events: events},
		Health: &machine.ServiceHealth{
			Unknown:     !svc.healthKnown,
			Healthy:     svc.healthy,
			LastMessage: svc.msg,
			LastChange:  ts,
		},
	}
}

// event is the ServiceStateEvent of the service's current state.
func (svc serviceState) event() *machine.ServiceStateEvent {
	action := machine.ServiceStateEvent_Action(machine.ServiceStateEvent_Action_value[strings.ToUpper(svc.state)])

	return &machine.ServiceStateEvent{
		Service: svc.id,
		Action:  action,
		Message: svc.msg,
		Health: &machine.ServiceHealth{
			Unknown:     !svc.healthKnown,
			Healthy:     svc.healthy,
			LastMessage: svc.msg,
		},
	}
}
