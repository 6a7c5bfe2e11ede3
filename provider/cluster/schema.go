package cluster

import (
	"reflect"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// The component's inputs are plain values: the plan is computed from them
// when the component is constructed (see TalosClusterArgs). Two workarounds
// of infer v1.5.0 (see package framework) keep it so: the schema marks every
// input plain, nested ones included, except fields whose Go type is a
// pulumi.Input (the Proxmox CCM token secret), and Construct refuses inputs
// that are not known yet.

// PlainInputs is the schema fix that marks the component's inputs plain.
func PlainInputs() framework.SchemaFix {
	return framework.PlainInputs(tokenComponent, reflect.TypeFor[TalosClusterArgs]())
}

// WithConstructGuards makes the provider's Construct of a TalosCluster
// refuse inputs that are not known yet, naming them, and end quietly when
// the engine stopped it (see quietShutdown).
func WithConstructGuards(prov p.Provider) p.Provider {
	prov.Construct = quietShutdown(acceptSecretInputs(refuseUnknownInputs(prov.Construct)))
	return prov
}
