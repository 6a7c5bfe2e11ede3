package talos

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/siderolabs/grpc-proxy/proxy"
	sidnet "github.com/siderolabs/net"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/role"
)

// apid is the node's Talos API front (internal/app/apid): mTLS on :50000,
// roles from the client certificate, and a transparent gRPC proxy that sends
// each call to the local machined or, following the "node"/"nodes" metadata
// talosctl sets, to other nodes' apid (one-to-many calls get each reply
// tagged with the node it came from).
type apid struct {
	node      *Node
	server    *grpc.Server
	conns     *connSet // connections to server, on every address it serves
	machined  *grpc.Server
	localLis  *bufconn.Listener
	localConn *grpc.ClientConn
	clientTLS *tls.Config
	port      int

	mu      sync.Mutex
	remotes map[string]*grpc.ClientConn
}

// apidStreamed lists the server-streaming methods (internal/app/apid/main.go).
var apidStreamed = regexp.MustCompile(`^/machine\.MachineService/(Copy|DiskUsage|Dmesg|EtcdSnapshot|Events|ImageList|Kubeconfig|List|Logs|PacketCapture|Read)$|^/cluster\.ClusterService/HealthCheck$|Stream$`)

// apidCerts are the certificates apid serves and forwards with.
type apidCerts struct {
	server    tls.Certificate
	client    tls.Certificate
	clientCAs [][]byte // PEM CAs accepted for client certificates (machine.ca + acceptedCAs)
}

func newAPID(n *Node, certs apidCerts) (*apid, error) {
	pool, err := certPool(certs.clientCAs...)
	if err != nil {
		return nil, fmt.Errorf("machine.ca: %w", err)
	}

	a := &apid{
		node:    n,
		conns:   newConnSet(),
		port:    n.sim.opts.APIPort,
		remotes: map[string]*grpc.ClientConn{},
		clientTLS: &tls.Config{
			Certificates: []tls.Certificate{certs.client},
			RootCAs:      pool,
			MinVersion:   tls.VersionTLS12,
		},
	}

	// machined, reached over an in-memory socket like apid reaches it over
	// /system/run/machined/machine.sock.
	a.machined = grpc.NewServer(
		grpc.ChainUnaryInterceptor(injectUnary(fromMetadata), authorizeUnary),
		grpc.ChainStreamInterceptor(injectStream(fromMetadata), authorizeStream),
	)
	registerMachined(a.machined, n)

	a.localLis = bufconn.Listen(1 << 20)

	go a.machined.Serve(a.localLis) //nolint:errcheck

	a.localConn, err = grpc.NewClient("passthrough:///machined",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return a.localLis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(proxy.Codec())),
	)
	if err != nil {
		a.machined.Stop()

		return nil, err
	}

	serverTLS := &tls.Config{
		Certificates:          []tls.Certificate{certs.server},
		ClientAuth:            tls.RequireAndVerifyClientCert,
		ClientCAs:             pool,
		VerifyPeerCertificate: verifyClientExtKeyUsage,
		MinVersion:            tls.VersionTLS12,
	}

	a.server = grpc.NewServer(
		grpc.Creds(credentials.NewTLS(serverTLS)),
		grpc.ForceServerCodecV2(proxy.Codec()),
		grpc.UnknownServiceHandler(proxy.TransparentHandler(a.director,
			proxy.WithStreamedDetector(apidStreamed.MatchString))),
		grpc.ChainUnaryInterceptor(n.pauseUnary, n.sim.faultUnary, injectUnary(certRoles)),
		grpc.ChainStreamInterceptor(n.pauseStream, n.sim.faultStream, injectStream(certRoles)),
	)

	return a, nil
}

func (a *apid) serve(l net.Listener) {
	go a.server.Serve(a.conns.listen(l)) //nolint:errcheck
}

// stop stops apid, letting in-flight calls finish for at most grace.
func (a *apid) stop(grace time.Duration) {
	stopGRPC(a.server, a.conns, grace)
	a.localConn.Close() //nolint:errcheck
	a.machined.Stop()

	a.mu.Lock()
	defer a.mu.Unlock()

	for _, c := range a.remotes {
		c.Close() //nolint:errcheck
	}

	a.remotes = map[string]*grpc.ClientConn{}
}

// director routes a call (internal/app/apid/pkg/director/director.go).
func (a *apid) director(ctx context.Context, method string) (proxy.Mode, []proxy.Backend, error) {
	local := &localBackend{conn: a.localConn}

	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return proxy.One2One, []proxy.Backend{local}, nil
	}

	if _, ok := md["proxyfrom"]; ok {
		return proxy.One2One, []proxy.Backend{local}, nil
	}

	nodes, okNodes := md["nodes"]
	node, okNode := md["node"]

	if okNode && len(node) != 1 {
		return proxy.One2One, nil, status.Error(codes.InvalidArgument, "node metadata must be single-valued")
	}

	switch {
	case okNodes:
		if strings.HasPrefix(method, "/cosi.") {
			return proxy.One2One, nil, status.Error(codes.InvalidArgument, "one-2-many proxying is not supported for COSI methods")
		}

		backends := make([]proxy.Backend, 0, len(nodes))

		for _, target := range nodes {
			b, err := a.remote(target)
			if err != nil {
				return proxy.One2Many, nil, status.Error(codes.Internal, err.Error())
			}

			backends = append(backends, b)
		}

		return proxy.One2Many, backends, nil
	case okNode:
		b, err := a.remote(node[0])
		if err != nil {
			return proxy.One2One, nil, status.Error(codes.Internal, err.Error())
		}

		return proxy.One2One, []proxy.Backend{b}, nil
	default:
		return proxy.One2One, []proxy.Backend{local}, nil
	}
}

func (a *apid) remote(target string) (*remoteBackend, error) {
	// As apid's backend factory: a bare address or name, no port.
	if target == "" || sidnet.AddressContainsPort(target) {
		return nil, fmt.Errorf("invalid target %q", target)
	}

	a.mu.Lock()
	defer a.mu.Unlock()

	conn, ok := a.remotes[target]
	if !ok {
		var err error

		conn, err = grpc.NewClient(fmt.Sprintf("%s:%d", sidnet.FormatAddress(target), a.port),
			grpc.WithTransportCredentials(credentials.NewTLS(a.clientTLS)),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(proxy.Codec()), grpc.MaxCallRecvMsgSize(constants.GRPCMaxMessageSize)),
		)
		if err != nil {
			return nil, err
		}

		a.remotes[target] = conn
	}

	return &remoteBackend{target: target, conn: conn}, nil
}

// outgoing copies the caller's metadata with its roles, for the next hop.
func outgoing(ctx context.Context) metadata.MD {
	md, _ := metadata.FromIncomingContext(ctx)
	md = md.Copy()
	md.Set(constants.APIAuthzRoleMetadataKey, rolesFrom(ctx).Strings()...)

	return md
}

// localBackend forwards to this node's machined.
type localBackend struct {
	conn *grpc.ClientConn
}

func (l *localBackend) String() string { return "machined" }

func (l *localBackend) GetConnection(ctx context.Context, _ string) (context.Context, *grpc.ClientConn, error) {
	return metadata.NewOutgoingContext(ctx, outgoing(ctx)), l.conn, nil
}

func (l *localBackend) AppendInfo(_ bool, resp []byte) ([]byte, error) { return resp, nil }

func (l *localBackend) BuildError(bool, error) ([]byte, error) { return nil, nil }

// remoteBackend forwards to another node's apid, as an impersonator.
type remoteBackend struct {
	target string
	conn   *grpc.ClientConn
}

func (r *remoteBackend) String() string { return r.target }

func (r *remoteBackend) GetConnection(ctx context.Context, _ string) (context.Context, *grpc.ClientConn, error) {
	md := outgoing(ctx)

	if authority := md[":authority"]; len(authority) > 0 {
		md.Set("proxyfrom", authority...)
	} else {
		md.Set("proxyfrom", "unknown")
	}

	delete(md, ":authority")
	delete(md, "nodes")
	delete(md, "node")

	return metadata.NewOutgoingContext(ctx, md), r.conn, nil
}

// AppendInfo adds common.Metadata{hostname: target} to a reply. Every Talos
// reply is `repeated X messages = 1` with X's field 1 being the metadata, so
// appending the encoded metadata field to the single embedded message (and
// fixing its length) tags it; streamed messages are X itself.
func (r *remoteBackend) AppendInfo(streaming bool, resp []byte) ([]byte, error) {
	meta, err := proto.Marshal(&common.Empty{Metadata: &common.Metadata{Hostname: r.target}})
	if err != nil {
		return nil, err
	}

	if streaming {
		return append(resp, meta...), nil
	}

	num, typ, n := protowire.ConsumeTag(resp)
	if n < 0 {
		return nil, protowire.ParseError(n)
	}

	if num != 1 || typ != protowire.BytesType {
		return nil, fmt.Errorf("unexpected message format: field %d type %d", num, typ)
	}

	inner, m := protowire.ConsumeBytes(resp[n:])
	if m < 0 {
		return nil, protowire.ParseError(m)
	}

	out := protowire.AppendTag(nil, 1, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(len(inner)+len(meta)))

	return slices.Concat(out, inner, meta, resp[n+m:]), nil
}

// BuildError turns a failed backend into a reply carrying the error in its
// metadata, so one-to-many calls report per node.
func (r *remoteBackend) BuildError(streaming bool, err error) ([]byte, error) {
	empty := &common.Empty{Metadata: &common.Metadata{
		Hostname: r.target,
		Error:    err.Error(),
		Status:   status.Convert(err).Proto(),
	}}

	if streaming {
		return proto.Marshal(empty)
	}

	return proto.Marshal(&common.EmptyResponse{Messages: []*common.Empty{empty}})
}

// hasRole reports whether the caller holds a role.
func hasRole(ctx context.Context, r role.Role) bool {
	return rolesFrom(ctx).Includes(r)
}
