package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// readTimeout bounds how long the summary waits for the nodes' running
// configurations: a node that does not answer is a warning, not a hang.
const readTimeout = 10 * time.Second

// configReader reads the configuration a node runs ("" with a nil error
// for a node in maintenance mode). Tests replace it.
type configReader func(ctx context.Context, node string, creds *talosapi.Credentials) (string, error)

func readRunningConfig(ctx context.Context, node string, creds *talosapi.Credentials) (string, error) {
	nc, mode, _, err := talosapi.ReadConfig(ctx, talosapi.Target{Node: node, Creds: creds},
		talosapi.Options{AttemptTimeout: readTimeout / 2, DefaultTimeout: readTimeout})
	if err != nil || mode == talosapi.ModeMaintenance {
		return "", err
	}
	return string(nc.Active), nil
}

// configEffect says what applying next does to a node running current:
// nothing, a live update, or a reboot (Talos' own rule, talosconfig
// ClassifyChange), with the reason for the summary. A Talos upgrade is
// reported by the plan already.
func configEffect(current, next string) (plan.Action, string, error) {
	if current == "" {
		return plan.ActionNone, "", nil
	}
	d1, err1 := talosapi.ConfigDigest([]byte(current))
	d2, err2 := talosapi.ConfigDigest([]byte(next))
	if err1 == nil && err2 == nil && d1 == d2 {
		return plan.ActionNone, "", nil
	}
	ch, err := talosconfig.ClassifyChange(current, next)
	if err != nil {
		return plan.ActionNone, "", err
	}
	if len(ch.Changed) == 0 {
		return plan.ActionNone, "", nil
	}
	if ch.Reboot {
		return plan.ActionReboot, "machine config: " + strings.Join(ch.RebootPaths, ", ") + " (reboot)", nil
	}
	return plan.ActionUpdate, fmt.Sprintf("machine config: %d path(s), applied live", len(ch.Changed)), nil
}

// summary is the component's summary output. For an existing cluster it
// adds what the machine configuration changes do to each node, learned by
// comparing the configuration each node runs (read-only, over mTLS, also
// in preview) with the one it is given; the plan alone cannot know, as a
// state rebuilt from Proxmox holds no configuration inputs. register
// makes the nodes' configurations wait for it, so the nodes are read
// before any of them changes.
func (f *fanout) summary(base plan.Summary, cluster string) pulumi.StringOutput {
	log := func(s string) { _ = f.ctx.Log.Info("cluster "+cluster+": "+s, &pulumi.LogArgs{Resource: f.comp}) }
	var existing []*plan.Node
	for i := range f.plan.Nodes {
		if f.plan.Nodes[i].Existing {
			existing = append(existing, &f.plan.Nodes[i])
		}
	}
	if len(existing) == 0 {
		log(base.String())
		return pulumi.String(base.String()).ToStringOutput()
	}
	read := f.readConfig
	if read == nil {
		read = readRunningConfig
	}
	out := pulumi.All(f.secrets.ClientConfiguration, f.configs).ApplyT(func(v []any) string {
		cc, configs := v[0].(map[string]string), v[1].(map[string]string)
		creds := &talosapi.Credentials{CA: []byte(cc["caCertificate"]), Cert: []byte(cc["clientCertificate"]), Key: []byte(cc["clientKey"])}
		s := refine(f.ctx.Context(), base, existing, configs, creds, read, func(w string) {
			_ = f.ctx.Log.Warn(w, &pulumi.LogArgs{Resource: f.comp})
		})
		log(s.String())
		return s.String()
	}).(pulumi.StringOutput)
	return pulumi.Unsecret(out).(pulumi.StringOutput)
}

// refine reads the nodes' running configurations in parallel and marks
// each node's configuration effect in the summary.
func refine(ctx context.Context, s plan.Summary, nodes []*plan.Node, configs map[string]string,
	creds *talosapi.Credentials, read configReader, warn func(string)) plan.Summary {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	type result struct {
		action plan.Action
		reason string
		err    error
	}
	results := make([]result, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			current, err := read(ctx, addressOf(n), creds)
			if err != nil {
				results[i].err = err
				return
			}
			results[i].action, results[i].reason, results[i].err = configEffect(current, configs[n.Name])
		}()
	}
	wg.Wait()
	for i, n := range nodes {
		r := results[i]
		switch {
		case r.err != nil:
			warn(fmt.Sprintf("node %s: its running configuration could not be read (%s): what a configuration change does to it is not in the summary; the preview of its ConfigurationApply says", n.Name, firstLine(r.err.Error())))
		case r.action != plan.ActionNone:
			s.Mark(n.Name, n.Role, r.action, r.reason)
		}
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
