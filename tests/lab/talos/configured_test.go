package talos

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"github.com/siderolabs/talos/pkg/machinery/role"
)

func TestBootstrapKubeconfigAndNodes(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1, workers: 1})
	ctx := ctxT(t)
	cp := tc.client(t, tc.cps[0])

	waitFor(t, "apid on cp1", func() bool { _, err := cp.Version(ctx); return err == nil })

	// Before bootstrap no etcd listens on the control plane endpoint. The
	// worker's apid gets its certificate from trustd on cp1 (the endpoint),
	// which runs before bootstrap.
	_, err := cp.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
	mustContain(t, err, "error building etcd client: context deadline exceeded")

	w := tc.client(t, tc.workers[0])
	waitFor(t, "worker apid", func() bool { _, err := w.Version(ctx); return err == nil })

	wantCode(t, w.Bootstrap(ctx, &machine.BootstrapRequest{}), codes.FailedPrecondition, "bootstrap can only be performed on a control plane node")

	if err := cp.Bootstrap(ctx, &machine.BootstrapRequest{}); err != nil {
		t.Fatal(err)
	}

	wantCode(t, cp.Bootstrap(ctx, &machine.BootstrapRequest{}), codes.AlreadyExists, "etcd data directory is not empty")

	tc.bootstrapWait(t)

	_, err = w.Kubeconfig(ctx)
	wantCode(t, err, codes.Unimplemented, "kubeconfig is only available on control plane nodes")

	// The Kubeconfig API streams a tar.gz with one file named "kubeconfig".
	stream, err := cp.KubeconfigRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}

	raw, err := io.ReadAll(stream)
	if err != nil {
		t.Fatal(err)
	}

	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}

	hdr, err := tar.NewReader(zr).Next()
	if err != nil || hdr.Name != "kubeconfig" || hdr.Mode != 0o600 {
		t.Fatalf("archive entry = %+v, %v", hdr, err)
	}

	kc := tc.kubeconfig(t)
	if !strings.Contains(string(kc), "server: https://"+tc.endpoint.String()+":6443") || !strings.Contains(string(kc), "current-context: admin@lab") {
		t.Fatalf("kubeconfig:\n%s", kc)
	}

	hc, server := kubeHTTP(t, kc)

	for _, path := range []string{"/readyz", "/livez", "/version", "/api", "/apis"} {
		resp, err := hc.Get(server + path)
		if err != nil {
			t.Fatal(err)
		}

		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close() //nolint:errcheck

		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, body)
		}

		// One real apiserver serves the cluster: its own version (the
		// cluster's 1.35 is its minor, so it emulates nothing).
		if path == "/version" && !strings.Contains(string(body), `"gitVersion": "`+kubeToolsT(t).KubernetesVersion+`"`) {
			t.Fatalf("/version = %s", body)
		}

		if path == "/api" && !strings.Contains(string(body), `"versions":["v1"]`) {
			t.Fatalf("/api = %s", body)
		}
	}

	nodes, err := tc.kubeNodes(t)
	if err != nil {
		t.Fatal(err)
	}

	cpNode, ok := nodeByName(nodes, "cp1")
	if !ok || readyStatus(cpNode) != "True" || !hasTaint(cpNode, "node-role.kubernetes.io/control-plane") {
		t.Fatalf("cp1 = %+v", cpNode)
	}

	wNode, ok := nodeByName(nodes, "w1")
	if !ok || readyStatus(wNode) != "True" || wNode.Spec.ProviderID != "" || hasTaint(wNode, "node-role.kubernetes.io/control-plane") {
		t.Fatalf("w1 = %+v", wNode)
	}

	if wNode.Status.NodeInfo["kubeletVersion"] != "v1.35.2" {
		t.Fatalf("kubelet version = %q", wNode.Status.NodeInfo["kubeletVersion"])
	}

	// The kubelet reports the boot ID machined's Read serves: one per boot.
	if id, err := readBootID(ctx, t, cp); err != nil || cpNode.Status.NodeInfo["bootID"]+"\n" != id {
		t.Fatalf("cp1: Node nodeInfo.bootID %q, Talos boot_id %q (%v): want the same ID", cpNode.Status.NodeInfo["bootID"], id, err)
	}

	// Without a client certificate the API refuses to list nodes.
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: hc.Transport.(*http.Transport).TLSClientConfig.Clone()}}
	anon.Transport.(*http.Transport).TLSClientConfig.Certificates = nil

	resp, err := anon.Get(server + "/api/v1/nodes")
	if err != nil {
		t.Fatal(err)
	}

	resp.Body.Close() //nolint:errcheck

	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous node list: %s", resp.Status)
	}
}

// bootstrapWait waits for what bootstrap leads to (etcd members, Ready nodes).
func (tc *testCluster) bootstrapWait(t *testing.T) {
	t.Helper()

	ctx := ctxT(t)
	c := tc.client(t, tc.cps[0])

	waitFor(t, "all control planes in etcd", func() bool {
		resp, err := c.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})

		return err == nil && len(resp.Messages[0].Members) == len(tc.cps) && allVoting(resp.Messages[0].Members)
	})

	waitFor(t, "all nodes Ready", func() bool {
		nodes, err := tc.kubeNodes(t)
		if err != nil || len(nodes) != len(tc.all()) {
			return false
		}

		for _, n := range nodes {
			if readyStatus(n) != "True" {
				return false
			}
		}

		return true
	})
}

func TestRolesAndClientCertificates(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})
	tc.bootstrap(t)

	ctx := ctxT(t)

	reader := roleConfig(t, tc, role.MakeSet(role.Reader))
	rc := secureClient(t, reader, tc.cps[0].addr())

	if _, err := rc.Version(ctx); err != nil {
		t.Fatalf("a reader may call Version: %v", err)
	}

	if _, err := rc.ServiceList(ctx); err != nil {
		t.Fatalf("a reader may list services: %v", err)
	}

	_, err := rc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: tc.cpConfig, Mode: machine.ApplyConfigurationRequest_AUTO})
	wantCode(t, err, codes.PermissionDenied, "not authorized")

	_, err = rc.Kubeconfig(ctx)
	wantCode(t, err, codes.PermissionDenied, "not authorized")

	_, err = rc.MachineClient.Reset(ctx, &machine.ResetRequest{Graceful: true})
	wantCode(t, err, codes.PermissionDenied, "not authorized")

	operator := secureClient(t, roleConfig(t, tc, role.MakeSet(role.Operator)), tc.cps[0].addr())

	_, err = operator.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: installer})
	wantCode(t, err, codes.PermissionDenied, "not authorized")

	// A client certificate from another CA fails the TLS handshake.
	other, err := secrets.NewBundle(secrets.NewFixedClock(testBundle(t).Clock.Now()), nil)
	if err != nil {
		t.Fatal(err)
	}

	cert, err := other.GenerateTalosAPIClientCertificate(role.MakeSet(role.Admin))
	if err != nil {
		t.Fatal(err)
	}

	foreign := clientconfig.NewConfig("lab", nil, testBundle(t).Certs.OS.Crt, cert)

	_, err = secureClient(t, foreign, tc.cps[0].addr()).Version(ctx)
	if err == nil {
		t.Fatal("a certificate from another CA must be refused")
	}

	// Services a Talos control plane runs.
	resp, err := tc.client(t, tc.cps[0]).ServiceList(ctx)
	if err != nil {
		t.Fatal(err)
	}

	states := map[string]string{}
	for _, svc := range resp.Messages[0].Services {
		states[svc.Id] = svc.State
	}

	for _, id := range []string{"apid", "etcd", "kubelet", "trustd", "machined", "containerd", "cri", "ext-qemu-guest-agent"} {
		if states[id] != "Running" {
			t.Errorf("service %s = %q, want Running (all: %v)", id, states[id], states)
		}
	}

	hn, err := tc.client(t, tc.cps[0]).MachineClient.Hostname(ctx, &emptypb.Empty{})
	if err != nil || hn.Messages[0].Hostname != "cp1" {
		t.Fatalf("Hostname = %v, %v", hn, err)
	}
}

func roleConfig(t *testing.T, tc *testCluster, roles role.Set) *clientconfig.Config {
	t.Helper()

	cert, err := testBundle(t).GenerateTalosAPIClientCertificate(roles)
	if err != nil {
		t.Fatal(err)
	}

	return clientconfig.NewConfig("lab", []string{tc.cps[0].addr().String()}, testBundle(t).Certs.OS.Crt, cert)
}

func TestOneToManyCallsTagEachNode(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 2})
	tc.bootstrap(t)

	ctx := ctxT(t)
	c := tc.client(t, tc.cps[0])

	a, b := tc.cps[0].addr().String(), tc.cps[1].addr().String()

	resp, err := c.Version(client.WithNodes(ctx, a, b))
	if err != nil {
		t.Fatal(err)
	}

	got := map[string]string{}
	for _, m := range resp.Messages {
		got[m.Metadata.GetHostname()] = m.Version.Tag
	}

	if len(got) != 2 || got[a] != testVersion || got[b] != testVersion {
		t.Fatalf("one-to-many Version = %v", got)
	}

	// Through cp1 to cp2 only.
	hn, err := c.MachineClient.Hostname(client.WithNode(ctx, b), &emptypb.Empty{})
	if err != nil || hn.Messages[0].Hostname != "cp2" {
		t.Fatalf("Hostname via node=cp2: %v, %v", hn, err)
	}

	// An unreachable node in a one-to-many call is reported per node (the
	// raw reply; machinery's helpers turn it into an error).
	dead := tc.cps[1].addr().Next().Next().String()

	_, err = c.Version(client.WithNodes(ctx, a, dead))
	mustContain(t, err, dead+": rpc error: code = Unavailable")

	resp, err = c.MachineClient.Version(client.WithNodes(ctx, a, dead), &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}

	var sawError bool

	for _, m := range resp.Messages {
		if m.Metadata.GetHostname() == dead && m.Metadata.GetError() != "" {
			sawError = true
		}
	}

	if !sawError {
		t.Fatalf("no per-node error for %s in %v", dead, resp.Messages)
	}

	_, err = c.COSI.List(client.WithNodes(ctx, a, b), resource.NewMetadata(runtime.NamespaceName, runtime.MachineStatusType, "", resource.VersionUndefined))
	if err == nil {
		t.Fatal("COSI calls must refuse one-to-many")
	}
}

func machineStatus(t *testing.T, c *client.Client) *runtime.MachineStatus {
	t.Helper()

	ms, err := safe.StateGetByID[*runtime.MachineStatus](ctxT(t), c.COSI, runtime.MachineStatusID)
	if err != nil {
		t.Fatal(err)
	}

	return ms
}

func TestMachineStatusReadiness(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})
	c := tc.client(t, tc.cps[0])
	ctx := ctxT(t)

	waitFor(t, "apid", func() bool { _, err := c.Version(ctx); return err == nil })

	// Before bootstrap a control plane runs but is not ready: no etcd, no
	// static pods, no Kubernetes node (Talos's MachineStatus conditions).
	ms := machineStatus(t, c)
	if ms.TypedSpec().Stage != runtime.MachineStageRunning || ms.TypedSpec().Status.Ready {
		t.Fatalf("before bootstrap: %+v", ms.TypedSpec())
	}

	var reasons []string
	for _, u := range ms.TypedSpec().Status.UnmetConditions {
		reasons = append(reasons, u.Name+": "+u.Reason)
	}

	all := strings.Join(reasons, "; ")
	for _, want := range []string{"services: etcd not running", "staticPods:", `nodeReady: node "cp1" status is not available yet`} {
		if !strings.Contains(all, want) {
			t.Errorf("unmet conditions %q lack %q", all, want)
		}
	}

	if err := c.Bootstrap(ctx, &machine.BootstrapRequest{}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "machine ready", func() bool { return machineStatus(t, c).TypedSpec().Status.Ready })
}

func TestBootstrapBeforeCRIIsRefused(t *testing.T) {
	t.Parallel()

	// A slow clock: CRI comes up 10 s * 0.05 after the configured boot.
	logs := &testLog{}
	s := New(Options{TimeScale: 0.05, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(s.Close)

	v := newVM("cp1", addressBlock()(11), "scsi0")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	in := clusterInput(t, v.addr())
	ctx := ctxT(t)

	if _, err := maintenanceClient(t, v.addr()).ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
		Data: configBytes(t, in, mtype.TypeControlPlane), Mode: machine.ApplyConfigurationRequest_AUTO,
	}); err != nil {
		t.Fatal(err)
	}

	// Connect as soon as apid listens (a gRPC client created earlier would
	// sit in its reconnect backoff past the window).
	waitPhase(t, n, PhaseRunning)
	waitFor(t, "apid listening", func() bool {
		conn, err := net.Dial("tcp", net.JoinHostPort(v.addr().String(), "50000"))
		if err == nil {
			conn.Close() //nolint:errcheck
		}

		return err == nil
	})

	c := secureClient(t, adminTalosconfig(t, in), v.addr())

	wantCode(t, c.Bootstrap(ctx, &machine.BootstrapRequest{}), codes.FailedPrecondition, "bootstrap is not available yet")

	waitFor(t, "bootstrap allowed", func() bool { return c.Bootstrap(ctx, &machine.BootstrapRequest{}) == nil })
}
