package talos

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The etcd client Talos builds for its etcd APIs (siderolabs/talos
// internal/pkg/etcd/etcd.go NewClient: clientv3 v3.7.1, no deadline of its
// own; v1alpha1_server.go EtcdMemberList calls MemberList with the
// request's ctx and clientv3.WithRequireLeader). Two parts of clientv3
// decide what a call without quorum answers: its balancer sends each
// attempt to a connected endpoint, and its retry interceptor calls again
// while etcd answers Unavailable for an RPC it deems safe to repeat
// (client/v3/retry_interceptor.go unaryClientInterceptor, isSafeRetry).

// etcdReqTimeout is etcd's request timeout with the lab's slowest flags
// (etcd v3.6 server/config/config.go ReqTimeout: 5 s plus twice the
// election timeout). A linearizable read (MemberList, Range) joins the
// ReadIndex round after the one under way, and a round without quorum
// ends with "etcdserver: request timed out" after this
// (server/etcdserver/v3_server.go linearizableReadLoop,
// requestCurrentIndex): a read can wait twice this for etcd's answer.
const etcdReqTimeout = 5*time.Second + 2*etcdSlowElectionMillis*time.Millisecond

// etcdCallBound bounds a lab call so that a hung member cannot hold the
// lab: the two read rounds, then one more for the retry after them on a
// loaded machine. A running member always answers sooner.
const etcdCallBound = 3 * etcdReqTimeout

// clientv3's retry settings (client/v3/options.go defaultUnaryMaxRetries,
// defaultBackoffWaitBetween; client.go roundRobinQuorumBackoff waits after
// every quorum-many attempts and adds ±10% jitter, left out here).
const (
	etcdClientMaxAttempts = 100
	etcdClientBackoff     = 25 * time.Millisecond
)

// etcdRepeatable are the gateway paths of the RPCs clientv3 calls again
// after any Unavailable answer (client/v3/retry.go withRepeatablePolicy:
// MemberList, Range, Alarm, Status, MoveLeader). The others (MemberAdd,
// MemberRemove, MemberPromote, Defragment) it repeats only when no
// connection was made, which the endpoint choice (pick) covers.
var etcdRepeatable = map[string]bool{
	"/v3/cluster/member/list":             true,
	"/v3/kv/range":                        true,
	"/v3/maintenance/alarm":               true,
	"/v3/maintenance/status":              true,
	"/v3/maintenance/transfer-leadership": true,
}

// grpcUnavailable is codes.Unavailable: etcd's transient refusals
// ("no leader", "leader changed", "request timed out", "unhealthy
// cluster"; api/v3rpc/rpctypes/error.go).
const grpcUnavailable = 14

// etcdRPCError is etcd's own refusal with its gRPC code; it unwraps to the
// lab's error value (etcdError), so callers match it with errors.Is.
type etcdRPCError struct {
	code int
	err  error
}

func (e *etcdRPCError) Error() string { return e.err.Error() }
func (e *etcdRPCError) Unwrap() error { return e.err }

// etcdRetry says whether clientv3 calls path again after err
// (isSafeRetryImmutableRPC: an Unavailable answer to a repeatable RPC).
func etcdRetry(path string, err error) bool {
	var re *etcdRPCError

	return errors.As(err, &re) && re.code == grpcUnavailable && etcdRepeatable[path]
}

// invoke is one clientv3 unary call through urls: each attempt goes to
// the first member that answers from the next one in turn on (the
// round-robin balancer), up to 100 attempts, backing off after every
// quorum-many. A caller's ctx that ends stops it with the context's error,
// as clientv3 does (waitRetryBackoff, ContextError); the lab's own bound
// ends it with the last answer. An answer that arrived stands even when the
// caller's ctx ended after it: clientv3 returns the reply (and nil) once
// gRPC has it (retry_interceptor.go unaryClientInterceptor returns as soon
// as invoker succeeds).
func (g *etcdGateway) invoke(parent context.Context, urls []string, path string, body, out any, requireLeader bool) error {
	ctx, cancel := context.WithTimeout(parent, etcdCallBound)
	defer cancel()

	quorum := len(urls)/2 + 1

	var err error

	for attempt := range etcdClientMaxAttempts {
		if attempt > 0 && attempt%quorum == 0 && !sleepCtx(ctx, etcdClientBackoff) {
			break
		}

		err = g.pick(ctx, urls, attempt, path, body, out, requireLeader)
		if !etcdRetry(path, err) {
			break
		}
	}

	if err != nil && parent.Err() != nil {
		return parent.Err()
	}

	return err
}

// pick sends one attempt to the first of urls, from the attempt's turn on,
// that answers: a member that is down, or a learner (which refuses all but
// status and serializable reads: "rpc not supported for learner"), passes
// the call on.
func (g *etcdGateway) pick(ctx context.Context, urls []string, attempt int, path string, body, out any, requireLeader bool) error {
	err := fmt.Errorf("%w: no member to call", errEtcdGateway)

	for i := range urls {
		err = g.call(ctx, urls[(attempt+i)%len(urls)], path, body, out, requireLeader)
		if !errors.Is(err, errEtcdGateway) && !errors.Is(err, errEtcdLearner) {
			return err
		}
	}

	return err
}

// callAny is a call through the client Talos builds from the control plane
// endpoints, with clientv3.WithRequireLeader as Talos sets on its
// membership calls; when no member answers, clientv3 gives up dialing.
func (g *etcdGateway) callAny(ctx context.Context, urls []string, path string, body, out any) error {
	if len(urls) == 0 {
		return errEtcdDial
	}

	err := g.invoke(ctx, urls, path, body, out, true)
	if errors.Is(err, errEtcdGateway) {
		return fmt.Errorf("%w (%w)", errEtcdDial, err)
	}

	return err
}
