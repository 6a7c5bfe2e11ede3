package talosapi

import (
	"context"
	"errors"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"
)

// failure says what an error from a Talos API call means for the caller.
type failure int

const (
	// failTransient: the node did not answer (refused, reset, timed out,
	// rebooting). Trying again later may succeed.
	failTransient failure = iota
	// failTLS: something answered TLS on the port but the handshake was
	// refused by either side: a node in maintenance mode rejects nothing but
	// its self-signed certificate fails our CA check; a configured node
	// requires a client certificate we did not send (or one from another
	// cluster). This tells which server is listening.
	failTLS
	// failPermanent: the node understood the call and refused it; repeating
	// the same call will not help (invalid config, permission, unsupported).
	failPermanent
)

func (f failure) String() string {
	switch f {
	case failTransient:
		return "transient"
	case failTLS:
		return "tls"
	default:
		return "permanent"
	}
}

// tlsRejectionMarkers are fragments of the Go crypto/tls and crypto/x509
// error texts that grpc-go wraps into an Unavailable status when a handshake
// fails (grpc credentials/tls.go; crypto/tls alert.go; crypto/x509 verify.go).
var tlsRejectionMarkers = []string{
	"certificate required",                            // TLS 1.3 alert: server wants a client cert (apid)
	"bad certificate",                                 // TLS 1.2 alert: server rejected our client cert
	"unknown certificate authority",                   // alert: server does not trust our client cert
	"certificate signed by unknown",                   // we do not trust the server (maintenance self-signed cert)
	"failed to verify certificate",                    // Go 1.20+ wrapper of the x509 errors above
	"certificate is not valid for",                    // server cert has no SAN for the address we dialled
	"certificate has expired",                         // either side's certificate expired
	"first record does not look like a tls handshake", // something else listens there
}

// classify maps an error from machinery's client (gRPC status, possibly
// wrapped in NodeError/multierror) to what the caller should do.
func classify(err error) failure {
	if err == nil {
		return failTransient
	}

	// A text that does not parse is the same at the next attempt.
	if errors.Is(err, errConfigParse) {
		return failPermanent
	}

	msg := strings.ToLower(err.Error())
	for _, m := range tlsRejectionMarkers {
		if strings.Contains(msg, m) {
			return failTLS
		}
	}

	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return failTransient
	}

	//nolint:exhaustive // the rest are permanent answers from the server
	switch client.StatusCode(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.ResourceExhausted:
		return failTransient
	case codes.Unknown:
		// A plain error (no status) from the dialer: connection refused etc.
		if isNetworkText(msg) {
			return failTransient
		}

		return failPermanent
	default:
		return failPermanent
	}
}

// isNetworkText reports error texts of a connection that failed below TLS.
func isNetworkText(msg string) bool {
	for _, m := range []string{"connection refused", "connection reset", "no route to host", "i/o timeout", "eof", "network is unreachable", "broken pipe", "transport is closing", "error reading server preface"} {
		if strings.Contains(msg, m) {
			return true
		}
	}

	return false
}

// statusMessage is the server's message of a gRPC error without the
// "rpc error: code = X desc = " prefix, for readable errors.
func statusMessage(err error) string {
	if st := client.Status(err); st != nil {
		return st.Message()
	}

	return err.Error()
}
