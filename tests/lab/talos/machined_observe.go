package talos

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	timeapi "github.com/siderolabs/talos/pkg/machinery/api/time"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// The read-only observation calls of machined
// (internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go,
// v1.12.5): files, memory, time, kernel log, service logs, containers.

// bootLogs is what one boot keeps in memory: the kernel ring buffer (with
// machined's "[talos]" lines, which machined writes to /dev/kmsg) and the
// per-service logs.
type bootLogs struct {
	bootID   string
	kmsg     *lineLog
	mu       sync.Mutex
	services map[string]*lineLog
}

func newBootLogs(img Image) *bootLogs {
	b := &bootLogs{bootID: uuid.New().String(), kmsg: newLineLog(), services: map[string]*lineLog{}}
	b.kernel("Linux version (simulated by the lab) Talos " + img.Version)
	b.kernel("Command line: talos.platform=" + img.Platform + " console=tty0 console=ttyS0 init_on_alloc=1 slab_nomerge pti=on")

	return b
}

// kernel adds a kernel message as /dev/kmsg formats it for Dmesg
// ("<facility>: <priority>: [<RFC3339Nano>]: <message>").
func (b *bootLogs) kernel(msg string) { b.kmsg.add(kmsgLine("kern", "info", msg)) }

// talos adds a machined log line, which machined sends to the kernel log.
func (b *bootLogs) talos(msg string) { b.kmsg.add(kmsgLine("user", "warning", "[talos] "+msg)) }

// consoleLine formats a log record as machined's console shows it.
func consoleLine(msg string, args []any) string {
	var b strings.Builder

	b.WriteString(msg)

	for i := 0; i+1 < len(args); i += 2 {
		fmt.Fprintf(&b, " %v=%v", args[i], args[i+1])
	}

	return b.String()
}

func kmsgLine(facility, priority, msg string) string {
	return fmt.Sprintf("%s: %7s: [%s]: %s\n", facility, priority, time.Now().UTC().Format(time.RFC3339Nano), msg)
}

func (b *bootLogs) close() {
	b.kmsg.close()

	b.mu.Lock()
	defer b.mu.Unlock()

	for _, l := range b.services {
		l.close()
	}
}

// service returns a service's log, created on first use as machined's
// logging manager does for any ID.
func (b *bootLogs) service(id string) *lineLog {
	b.mu.Lock()
	defer b.mu.Unlock()

	l := b.services[id]
	if l == nil {
		l = newLineLog()
		b.services[id] = l
	}

	return l
}

func (n *Node) bootLogs() *bootLogs {
	n.sim.mu.Lock()
	defer n.sim.mu.Unlock()

	if n.servers == nil {
		return nil
	}

	return n.servers.logs
}

// Read streams a file. The lab's nodes have a few files: the boot ID, the
// hostname, os-release, the kernel command line and the machine config on
// STATE; anything else is NotFound as os.Stat reports it, and directories
// are refused. A call that reaches a boot being torn down (its servers
// gone) answers as a node going down, never that the boot ID does not
// exist: Talos always has the file.
func (m *machined) Read(in *machine.ReadRequest, srv machine.MachineService_ReadServer) error {
	if m.node.bootLogs() == nil {
		return status.Error(codes.Unavailable, "node is not running")
	}

	files, dirs := m.node.files()

	p := path.Clean(in.Path)

	content, ok := files[p]

	switch {
	case ok:
	case dirs[p]:
		return fmt.Errorf("path must be a regular file")
	default:
		return status.Error(codes.NotFound, (&fs.PathError{Op: "stat", Path: in.Path, Err: syscall.ENOENT}).Error())
	}

	return srv.Send(&common.Data{Bytes: content})
}

// files is the node's simulated file tree (regular files and directories).
func (n *Node) files() (map[string][]byte, map[string]bool) {
	s := n.sim
	s.mu.Lock()
	defer s.mu.Unlock()

	files := map[string][]byte{
		"/etc/hostname": []byte(n.hostname + "\n"),
		"/etc/os-release": fmt.Appendf(nil, "NAME=\"Talos\"\nID=talos\nVERSION_ID=%s\nPRETTY_NAME=\"Talos (%s)\"\n"+
			"HOME_URL=\"https://www.talos.dev/\"\nBUG_REPORT_URL=\"https://github.com/siderolabs/talos/issues\"\n"+
			"VENDOR_NAME=\"Sidero Labs\"\nVENDOR_URL=\"https://www.siderolabs.com/\"\n", n.image.Version, n.image.Version),
		"/proc/cmdline": []byte("talos.platform=" + n.image.Platform + " console=tty0 console=ttyS0 init_on_alloc=1 slab_nomerge pti=on\n"),
	}

	if n.servers != nil && n.servers.logs != nil {
		files["/proc/sys/kernel/random/boot_id"] = []byte(n.servers.logs.bootID + "\n")
	}

	if n.ps != nil && n.ps.config != nil {
		files[constants.StateMountPoint+"/"+constants.ConfigFilename] = n.ps.config
	}

	dirs := map[string]bool{}

	for p := range files {
		for d := path.Dir(p); ; d = path.Dir(d) {
			dirs[d] = true

			if d == "/" {
				break
			}
		}
	}

	return files, dirs
}

// Memory reports /proc/meminfo of a guest with the VM's memory (kB), about
// a fifth of it in use by Talos and Kubernetes.
func (m *machined) Memory(context.Context, *emptypb.Empty) (*machine.MemoryResponse, error) {
	m.node.sim.mu.Lock()
	mib := m.node.machine.MemoryMiB
	m.node.sim.mu.Unlock()

	if mib == 0 {
		mib = 2048
	}

	total := uint64(mib)*1024 - 120*1024 // the kernel keeps some for itself
	used := total / 5
	cached := total / 10
	buffers := uint64(4 * 1024)

	return &machine.MemoryResponse{Messages: []*machine.Memory{{Meminfo: &machine.MemInfo{
		Memtotal:     total,
		Memfree:      total - used - cached - buffers,
		Memavailable: total - used,
		Buffers:      buffers,
		Cached:       cached,
		Shmem:        2 * 1024,
		Hugepagesize: 2048,
	}}}}, nil
}

// timeServer is the TimeService (v1alpha1_time.go): Time asks the first
// configured NTP server (time.cloudflare.com by default). The lab answers
// for it with the host's clock.
type timeServer struct {
	timeapi.UnimplementedTimeServiceServer

	node *Node
}

func (t *timeServer) Time(ctx context.Context, _ *emptypb.Empty) (*timeapi.TimeResponse, error) {
	server := constants.DefaultNTPServer

	t.node.sim.mu.Lock()
	if cfg := t.node.active; cfg != nil {
		if tc := cfg.NetworkTimeSyncConfig(); tc != nil && len(tc.Servers()) > 0 {
			server = tc.Servers()[0]
		}
	}
	t.node.sim.mu.Unlock()

	return t.TimeCheck(ctx, &timeapi.TimeRequest{Server: server})
}

func (t *timeServer) TimeCheck(_ context.Context, in *timeapi.TimeRequest) (*timeapi.TimeResponse, error) {
	now := time.Now()

	return &timeapi.TimeResponse{Messages: []*timeapi.Time{{
		Server:     in.Server,
		Localtime:  timestamppb.New(now),
		Remotetime: timestamppb.New(now),
	}}}, nil
}

// Dmesg streams the kernel log: everything, or (tail) only what comes
// next; follow keeps the stream open.
func (m *machined) Dmesg(req *machine.DmesgRequest, srv machine.MachineService_DmesgServer) error {
	logs := m.node.bootLogs()
	if logs == nil {
		return status.Error(codes.Unavailable, "node is not running")
	}

	tail := -1
	if req.Tail {
		tail = 0
	}

	return logs.kmsg.read(srv.Context(), tail, req.Follow, func(line string) error {
		return srv.Send(&common.Data{Bytes: []byte(line)})
	})
}

// Logs streams a system service's log (namespace "system", or kubelet);
// other containers' logs come from the CRI, which the lab does not run.
func (m *machined) Logs(req *machine.LogsRequest, srv machine.MachineService_LogsServer) error {
	logs := m.node.bootLogs()
	if logs == nil {
		return status.Error(codes.Unavailable, "node is not running")
	}

	switch {
	case req.Namespace == constants.SystemContainerdNamespace || req.Id == "kubelet":
	case req.Namespace == "":
		return status.Errorf(codes.InvalidArgument, "namespace can't be empty")
	case req.Driver == common.ContainerDriver_CRI && req.Namespace != constants.K8sContainerdNamespace:
		return errors.New("CRI inspector is supported only for K8s namespace")
	case req.Driver == common.ContainerDriver_CRI:
		return m.criLogs(req, srv)
	default: // containerd's own view of k8s.io (its container IDs) is not simulated
		return fmt.Errorf("container %q not found", req.Id)
	}

	return logs.service(req.Id).read(srv.Context(), int(req.TailLines), req.Follow, func(line string) error {
		return srv.Send(&common.Data{Bytes: []byte(line)})
	})
}

// LogsContainers lists the services that have logs.
func (m *machined) LogsContainers(context.Context, *emptypb.Empty) (*machine.LogsContainersResponse, error) {
	logs := m.node.bootLogs()

	var ids []string

	if logs != nil {
		logs.mu.Lock()
		for id := range logs.services {
			ids = append(ids, id)
		}
		logs.mu.Unlock()
	}

	slices.Sort(ids)

	return &machine.LogsContainersResponse{Messages: []*machine.LogsContainer{{Ids: ids}}}, nil
}

// Containers lists the containers of a containerd namespace: in "system" the
// services Talos runs as containers (apid, trustd, etcd, extension
// services), in "k8s.io" the kubelet's pods (cri.go).
func (m *machined) Containers(_ context.Context, in *machine.ContainersRequest) (*machine.ContainersResponse, error) {
	n := m.node
	s := n.sim

	s.mu.Lock()
	services := s.nodeServices(n)
	s.mu.Unlock()

	var list []*machine.ContainerInfo

	switch in.Namespace {
	case constants.SystemContainerdNamespace:
		for i, svc := range services {
			if svc.state != "Running" || !containerService(svc.id) {
				continue
			}

			list = append(list, &machine.ContainerInfo{
				Namespace: in.Namespace, Id: svc.id, PodId: svc.id, Name: svc.id,
				Image: svc.id, Pid: uint32(1000 + 100*i), Status: "RUNNING",
			})
		}
	case constants.K8sContainerdNamespace:
		s.mu.Lock()
		list = n.criContainers(in.Namespace)
		s.mu.Unlock()
	}

	return &machine.ContainersResponse{Messages: []*machine.Container{{Containers: list}}}, nil
}

// containerService: the services Talos runs in containerd's system
// namespace (the others are processes of machined or the host).
func containerService(id string) bool {
	switch id {
	case "apid", "trustd", "etcd":
		return true
	}

	return strings.HasPrefix(id, "ext-")
}
