package provider

import (
	"strconv"
	"strings"
)

// MaxLogVerbosity is the highest -v the provider process honours. At 9 the
// Pulumi SDK logs every property it marshals for an RPC, secrets included,
// in plain text (pulumi sdk v3.259.0 go/common/resource/plugin/rpc.go,
// "Marshaling property for RPC"; pulumi-go-provider v1.5.0 marshals every
// request and response through it), and `pulumi up -v=9 --logflow` hands
// -v=9 to plugins and prints what they log. Nothing below 9 dumps values.
const MaxLogVerbosity = 8

// CapLogVerbosity rewrites a verbosity flag (-v=N, --v=N, -v N) above
// MaxLogVerbosity in a plugin's command line to MaxLogVerbosity.
func CapLogVerbosity(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)

	for i := 0; i < len(out); i++ {
		a := out[i]

		switch {
		case strings.HasPrefix(a, "-v=") || strings.HasPrefix(a, "--v="):
			name, value, _ := strings.Cut(a, "=")
			out[i] = name + "=" + capLevel(value)
		case (a == "-v" || a == "--v") && i+1 < len(out):
			out[i+1] = capLevel(out[i+1])
			i++
		}
	}

	return out
}

func capLevel(value string) string {
	if n, err := strconv.Atoi(value); err == nil && n > MaxLogVerbosity {
		return strconv.Itoa(MaxLogVerbosity)
	}

	return value
}
