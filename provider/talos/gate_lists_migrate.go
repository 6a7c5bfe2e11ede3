package talos

import (
	"context"

	"github.com/pulumi/pulumi-go-provider/infer"
)

// shrink gives inputs or a state written before the lists left the state
// (they hold the lists and no gateLists) the current shape, as Check
// would have: a refresh migrates a stack at once, instead of each node's
// next update, so its no-op previews stop decoding the lists. Nothing a
// later operation reads is lost: its waits take the lists from its own
// inputs, and the record keeps the counts Check compares with
// (gate_lists_dropped.go).
func (in gateInputs) shrink() {
	if *in.record == nil && *in.gate != nil {
		in.move()
	}
}

// Read gives a state of the previous shape the current one (shrink); the
// components have nothing else to read: Diff compares kubernetesVersion
// with the inputs, and an update reads the node.
func (*ControlPlaneComponents) Read(_ context.Context, req infer.ReadRequest[ControlPlaneComponentsArgs, ControlPlaneComponentsState]) (infer.ReadResponse[ControlPlaneComponentsArgs, ControlPlaneComponentsState], error) {
	in, st := req.Inputs, req.State
	in.gateInputs().shrink()
	st.gateInputs().shrink()

	return infer.ReadResponse[ControlPlaneComponentsArgs, ControlPlaneComponentsState]{ID: req.ID, Inputs: in, State: st}, nil
}

var _ infer.CustomRead[ControlPlaneComponentsArgs, ControlPlaneComponentsState] = (*ControlPlaneComponents)(nil)
