package talos

import (
	"fmt"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// criLogs is `talosctl logs -k <id>`: machined's k8slogs
// (v1alpha1_server.go) finds the container through the CRI inspector
// ("<ns>/<pod>:<name>[:<container ID prefix>]", cri.go parseContainerDisplay)
// and streams its log file, which holds the CRI log format
// ("<RFC3339Nano time> <stream> F <line>"). kube-apiserver's log is the real
// apiserver's output; the lab runs no other process, so any other container
// logs one line saying so (as its kubelet API does, kubeletapi.go).
func (m *machined) criLogs(req *machine.LogsRequest, srv machine.MachineService_LogsServer) error {
	lines, err := m.node.criLog(req.Id)
	if err != nil {
		return err
	}

	if req.TailLines >= 0 && int(req.TailLines) < len(lines) {
		lines = lines[len(lines)-int(req.TailLines):]
	}

	for _, l := range lines {
		if err := srv.Send(&common.Data{Bytes: []byte(l + "\n")}); err != nil {
			return err
		}
	}

	if req.Follow { // nothing more is written: follow until the caller stops
		<-srv.Context().Done()
	}

	return nil
}

// criLog is the CRI log of the container id names on this node.
func (n *Node) criLog(id string) ([]string, error) {
	ns, rest, _ := strings.Cut(id, "/")
	pod, rest, _ := strings.Cut(rest, ":")
	name, cntID, _ := strings.Cut(rest, ":")

	s := n.sim

	s.mu.Lock()
	list := n.criContainers(constants.K8sContainerdNamespace)
	host, boot := strings.ToLower(n.hostname), n.bootedAt

	var kcp *kubeControlPlane
	if n.active != nil {
		if c := s.clusters[n.active.Cluster().ID()]; c != nil {
			kcp = c.kube
		}
	}
	s.mu.Unlock()

	var found *machine.ContainerInfo

	for _, c := range list {
		if name != "" && c.PodId == ns+"/"+pod && c.Name == name && strings.HasPrefix(c.InternalId, cntID) {
			found = c

			break
		}
	}

	if found == nil {
		return nil, fmt.Errorf("container %q not found", id)
	}

	if pod == "kube-apiserver-"+host && name == "kube-apiserver" && kcp != nil {
		if out := kcp.apiServerOutput(); out != "" {
			var lines []string

			for line := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
				lines = append(lines, criLogLine(klogTime(line, boot), "stderr", line))
			}

			return lines, nil
		}
	}

	return []string{criLogLine(boot, "stdout", fmt.Sprintf(
		"lab: container %q (%s) of pod %s/%s started; the lab simulates the pod and runs no process, so this is its only log line",
		name, found.Image, ns, pod))}, nil
}

func criLogLine(at time.Time, stream, text string) string {
	return at.UTC().Format(time.RFC3339Nano) + " " + stream + " F " + text
}
