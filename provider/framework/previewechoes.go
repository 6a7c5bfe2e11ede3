package framework

import (
	"context"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// PreviewEchoes names components whose children's preview Creates return
// no output that only repeats the same-named input. infer derives outputs
// from a State that embeds the Args, so a preview's planned state holds
// every input twice (a VirtualMachine's nested cpu, disks, cloudInit...),
// and the CLI serializes the whole planned state after every step of a
// preview, on its critical path (pulumi pkg/backend/snapshot.go
// saveSnapshot: a new cluster's preview paid about 11 µs per VM and write
// for the copies, issue 14).
//
// Nothing loses the copies: the preview shows a create's inputs, never its
// outputs (pulumi pkg/backend/display/object_diff.go
// getResourceOutputsPropertiesString returns nothing while planning but for
// reads, imports and the stack), `pulumi preview --json` shows the same
// values in the step's inputs, and the component reads only the outputs
// KeepOutputs names for the type, which stay (a missing output resolves as
// unknown in a preview, pulumi sdk/go/pulumi/context.go resolve). Only
// children of the components named are trimmed: a program that creates a
// resource itself may read an echoed output in its preview. A real Create
// (an up) returns the whole state as before.
type PreviewEchoes []string

// Wrap trims the preview Creates of the components' children.
func (pe PreviewEchoes) Wrap(prov p.Provider) p.Provider {
	inner := prov.Create
	if inner == nil || len(pe) == 0 {
		return prov
	}
	prov.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
		resp, err := inner(ctx, req)
		if err != nil || !req.DryRun || !pe.childOf(req.Urn) {
			return resp, err
		}
		kept, ok := keptOf(string(req.Urn.Type()))
		if !ok {
			return resp, nil // the component reads every output of the type
		}
		var echoes []string
		for k, v := range resp.Properties.All {
			if in, has := req.Properties.GetOk(k); has && !kept[k] && v.Equals(in) {
				echoes = append(echoes, k)
			}
		}
		resp.Properties = without(resp.Properties, echoes)
		return resp, nil
	}
	return prov
}

// childOf says whether urn's parent is of one of the components' types
// (the URN's qualified type is the parent's, "$", the resource's).
func (pe PreviewEchoes) childOf(urn presource.URN) bool {
	if !urn.IsValid() {
		return false
	}
	qt := string(urn.QualifiedType())
	i := strings.LastIndex(qt, "$")
	if i < 0 {
		return false
	}
	parents := qt[:i]
	return slices.Contains(pe, parents[strings.LastIndex(parents, "$")+1:])
}
