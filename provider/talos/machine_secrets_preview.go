package talos

import (
	"context"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

const machineSecretsToken = "proxmoxtalos:talos:MachineSecrets"

// WithRenewalPreview makes the preview of a MachineSecrets update that will
// renew the admin certificate show clientConfiguration (and its expiry) as
// unknown, so that the preview lists the resources that receive the new
// certificate. infer computes unknowns only from changed inputs, and a due
// renewal changes none; its WireDependencies keep the outputs known for
// every other update (a talosVersion bump must not ripple through a
// cluster). now is the clock renewals are decided by.
func WithRenewalPreview(prov p.Provider, now func() time.Time) p.Provider {
	inner := prov.Update
	if inner == nil {
		return prov
	}

	prov.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
		resp, err := inner(ctx, req)
		if err != nil || !req.DryRun || string(req.Urn.Type()) != machineSecretsToken || !renewalDueIn(req.State, req.Inputs, now) {
			return resp, err
		}

		unknown := property.New(property.Computed)
		resp.Properties = resp.Properties.
			Set("clientConfiguration", unknown.WithSecret(true)).
			Set("clientCertificateExpiry", unknown)

		return resp, nil
	}

	return prov
}

// renewalDueIn decides, from the raw state and the new inputs, what
// MachineSecrets.Update decides: a renewal of the admin certificate.
func renewalDueIn(state, inputs property.Map, now func() time.Time) bool {
	cc := state.Get("clientConfiguration")
	if !cc.IsMap() {
		return false
	}

	cert := cc.AsMap().Get("clientCertificate")
	if !cert.IsString() {
		return false
	}

	st := MachineSecretsState{ClientConfiguration: ClientConfiguration{ClientCertificate: cert.AsString()}}

	window := inputs.Get("clientCertificateRenewalWindowHours")
	if !window.IsNumber() {
		window = state.Get("clientCertificateRenewalWindowHours")
	}

	if !window.IsNumber() {
		return false
	}

	st.ClientCertificateRenewalWindowHours = int(window.AsNumber())

	return (&MachineSecrets{Now: now}).renewalDue(st)
}
