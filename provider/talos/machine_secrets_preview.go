package talos

import (
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

const machineSecretsToken = "proxmoxtalos:talos:MachineSecrets"

// RenewalPreview makes the preview of a MachineSecrets update that will
// renew the admin certificate show clientConfiguration (and its expiry) as
// unknown, so that the preview lists the resources that receive the new
// certificate (framework.PreviewUnknowns says why infer does not). infer's
// WireDependencies keep the outputs known for every other update (a
// talosVersion bump must not ripple through a cluster). now is the clock
// renewals are decided by.
func RenewalPreview(now func() time.Time) framework.PreviewUnknowns {
	return framework.PreviewUnknowns{
		Token: machineSecretsToken,
		When:  func(state, inputs property.Map) bool { return renewalDueIn(state, inputs, now) },
		Outputs: []framework.PreviewOutput{
			{Name: "clientConfiguration", Secret: true},
			{Name: "clientCertificateExpiry"},
		},
	}
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
