package talos

import (
	"context"
	"fmt"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// credentials converts the client configuration for talosapi.
func (c ClientConfiguration) credentials() (*talosapi.Credentials, error) {
	var creds talosapi.Credentials

	for _, f := range []struct {
		name string
		in   string
		out  *[]byte
	}{{"caCertificate", c.CACertificate, &creds.CA}, {"clientCertificate", c.ClientCertificate, &creds.Cert}, {"clientKey", c.ClientKey, &creds.Key}} {
		if strings.TrimSpace(f.in) == "" {
			return nil, fmt.Errorf("clientConfiguration.%s is empty: pass the cluster's client configuration (MachineSecrets.clientConfiguration)", f.name)
		}

		b, err := talosapi.DecodePEMOrBase64(f.in)
		if err != nil {
			return nil, fmt.Errorf("clientConfiguration.%s: %w", f.name, err)
		}

		*f.out = b
	}

	if err := creds.Validate(); err != nil {
		return nil, err
	}

	return &creds, nil
}

// Timeouts bound the operations of a resource that waits for Talos nodes.
type Timeouts struct {
	Create *string `pulumi:"create,optional"`
	Update *string `pulumi:"update,optional"`
	Delete *string `pulumi:"delete,optional"`
}

// Annotate documents the type.
func (t *Timeouts) Annotate(a infer.Annotator) {
	framework.Annotate(a, t, func() {
		a.Describe(t, "How long an operation may wait for Talos nodes, as a Go duration (`90s`, `10m`, `1h`). "+
			"When it passes, the operation fails with what it waited for and what it last saw. Pulumi's "+
			"`customTimeouts` resource option also applies; an unset value here then defers to it.")
		a.Describe(&t.Create, "Limit for create. Default `10m` (or the customTimeouts create value).")
		a.Describe(&t.Update, "Limit for update. Default `10m` (or the customTimeouts update value).")
		a.Describe(&t.Delete, "Limit for delete. Default `5m` (or the customTimeouts delete value).")
	})
}

const (
	defaultCreateTimeout = 10 * time.Minute
	defaultUpdateTimeout = 10 * time.Minute
	defaultDeleteTimeout = 5 * time.Minute
	// readTimeout bounds a refresh: a node that does not answer in this
	// time is reported and its state kept.
	readTimeout = 1 * time.Minute
)

func (t *Timeouts) pick(op string) (*string, time.Duration) {
	switch {
	case op == "create" && t != nil:
		return t.Create, defaultCreateTimeout
	case op == "update" && t != nil:
		return t.Update, defaultUpdateTimeout
	case op == "delete" && t != nil:
		return t.Delete, defaultDeleteTimeout
	case op == "create":
		return nil, defaultCreateTimeout
	case op == "update":
		return nil, defaultUpdateTimeout
	default:
		return nil, defaultDeleteTimeout
	}
}

// duration is the limit for op ("create", "update", "delete").
func (t *Timeouts) duration(op string) (time.Duration, error) {
	s, def := t.pick(op)
	if s == nil || strings.TrimSpace(*s) == "" {
		return def, nil
	}

	d, err := time.ParseDuration(strings.TrimSpace(*s))
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeouts.%s %q is not a positive Go duration like 90s, 10m or 1h", op, *s)
	}

	return d, nil
}

// checkTimeouts validates every timeout for Check.
func checkTimeouts(t *Timeouts) []p.CheckFailure {
	var fails []p.CheckFailure

	for _, op := range []string{"create", "update", "delete"} {
		if _, err := t.duration(op); err != nil {
			fails = append(fails, p.CheckFailure{Property: "timeouts." + op, Reason: err.Error()})
		}
	}

	return fails
}

// apiOptions are talosapi options that report progress to the Pulumi CLI:
// waits as status lines, other events as info lines.
func apiOptions(ctx context.Context, base talosapi.Options) talosapi.Options {
	log := enginelog.Logger(ctx)
	base.Progress = func(msg string) {
		if strings.HasPrefix(msg, "waiting for ") {
			log.InfoStatus(msg)

			return
		}

		log.Info(msg)
	}

	return base
}

// withTimeout bounds ctx by the operation's timeout. Pulumi's own
// customTimeouts option already puts a deadline on ctx (pulumi-go-provider
// middleware/cancel); it wins over our default, not over an explicit
// timeouts input.
func withTimeout(ctx context.Context, t *Timeouts, op string) (context.Context, context.CancelFunc, error) {
	d, err := t.duration(op)
	if err != nil {
		return ctx, func() {}, err
	}

	if s, _ := t.pick(op); (s == nil || strings.TrimSpace(*s) == "") && hasDeadline(ctx) {
		c, cancel := context.WithCancel(ctx)

		return c, cancel, nil
	}

	c, cancel := context.WithTimeout(ctx, d)

	return c, cancel, nil
}

// nodeTarget builds the talosapi target of a node.
func nodeTarget(node string, endpoints []string, cc ClientConfiguration) (talosapi.Target, error) {
	creds, err := cc.credentials()
	if err != nil {
		return talosapi.Target{}, err
	}

	t := talosapi.Target{Node: node, Endpoints: endpoints, Creds: creds}

	return t, t.Validate()
}

// checkNodeAddress validates a node address input for Check.
func checkNodeAddress(property, node string) []p.CheckFailure {
	if node == "" {
		// Unknown during preview, or missing (the schema says required).
		return nil
	}

	if err := (talosapi.Target{Node: node}).Validate(); err != nil {
		return []p.CheckFailure{{Property: property, Reason: err.Error()}}
	}

	return nil
}

// checkNodeAndEndpoints validates a node address and the endpoints to
// reach it through for Check.
func checkNodeAndEndpoints(node string, endpoints []string) []p.CheckFailure {
	fails := checkNodeAddress("node", node)

	for i, e := range endpoints {
		if e != "" {
			fails = append(fails, checkNodeAddress(fmt.Sprintf("endpoints[%d]", i), e)...)
		}
	}

	return fails
}

func hasDeadline(ctx context.Context) bool {
	_, ok := ctx.Deadline()

	return ok
}
