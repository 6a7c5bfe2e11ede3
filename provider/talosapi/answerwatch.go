package talosapi

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/siderolabs/talos/pkg/machinery/client/dialer"
	"google.golang.org/grpc"
)

// answerWatch tells whether a node sent anything back on the connections a
// gRPC client dialled. A failed mTLS call says only "unavailable" or
// "deadline exceeded"; what follows depends on whether the node answered
// at all. One that did (another cluster's apid, maintenance mode) is
// probed to say which it is. One that did not (refused, unreachable, or
// silent: off, booting, dropping packets) would make the probe wait for
// nothing a second time, spending a preview's whole read time in one
// attempt, so the attempt ends there (Target.Configured).
type answerWatch struct {
	answered atomic.Bool

	mu      sync.Mutex
	dialErr error
}

// dialOption makes the client dial through the watch. It wraps machinery's
// own default dialer (client.WithDefaultGRPCDialOptions: DynamicProxyDialer,
// which honours HTTPS_PROXY), so the dial itself is unchanged.
func (w *answerWatch) dialOption() grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := dialer.DynamicProxyDialer(ctx, addr)
		if err != nil {
			// A dial the client cancels itself (it closed) says nothing
			// about the node.
			if !errors.Is(err, context.Canceled) {
				w.mu.Lock()
				w.dialErr = err
				w.mu.Unlock()
			}

			return nil, err
		}

		return &watchedConn{Conn: c, w: w}, nil
	})
}

// lastDialErr is the last failed dial's error (nil: none failed, or the
// dial was still under way when the call ended).
func (w *answerWatch) lastDialErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()

	return w.dialErr
}

// watchedConn marks the watch once the node sent a byte.
type watchedConn struct {
	net.Conn
	w *answerWatch
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.w.answered.Store(true)
	}

	return n, err
}
