package framework

import (
	"context"
	"sync/atomic"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
)

// Check calls the resource's own Check as infer does (infer/resource.go
// derivedResourceController.Check, the CustomCheck case) and, for inputs
// EncodeChecked takes, encodes what it returns itself: infer would decode
// the inputs once more only to learn where their secrets, unknowns and
// empty lists were, and convert between Pulumi's property models on the
// way. Other inputs, and a resource without a Check, go to infer. Either
// way the unknowns of the inputs that the encoding drops are put back
// (keepUnknowns).
func (d diffVia[R, I, O]) Check(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
	c, ok := any(d.r).(infer.CustomCheck[I])
	if !ok || !checkedPlainly[I](req.Inputs) {
		resp, err := d.InferredResource.Check(ctx, req)
		if err == nil {
			resp.Inputs = keepUnknowns(resp.Inputs, req.Inputs)
		}
		return resp, err
	}
	checkedHere.Add(1)
	resp, err := c.Check(ctx, infer.CheckRequest{Name: req.Urn.Name(), OldInputs: req.State, NewInputs: req.Inputs})
	if err != nil {
		return p.CheckResponse{}, err
	}
	return p.CheckResponse{Inputs: keepUnknowns(encodeChecked(resp.Inputs, req.Inputs), req.Inputs), Failures: resp.Failures}, nil
}

// checkedHere counts the Checks encoded here (for the tests).
var checkedHere atomic.Int64
