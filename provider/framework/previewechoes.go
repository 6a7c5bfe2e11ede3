package framework

import (
	"context"
	"sync"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// PreviewEchoes trims the preview Creates of the resources a component of
// this process registered (RegisterEcho): they return no output that only
// repeats the same-named input. infer derives outputs from a State that
// embeds the Args, so a preview's planned state holds every input twice (a
// VirtualMachine's nested cpu, disks, cloudInit...), and the CLI serializes
// the whole planned state after every step of a preview, on its critical
// path (pulumi pkg/backend/snapshot.go saveSnapshot: a new cluster's
// preview paid about 11 µs per VM and write for the copies, issue 14).
//
// The preview's text shows a create's inputs, never its outputs (pulumi
// pkg/backend/display/object_diff.go getResourceOutputsPropertiesString
// returns nothing while planning but for reads, imports and the stack), and
// the component reads only the outputs KeepOutputs names for the type, which
// stay; `pulumi preview --json` shows each step's states from before its
// create (pulumi pkg/backend/display/json.go, ResourcePreEvent). What does
// see the copies go: Automation API engine events (a create's
// resOutputsEvent), and policy packs' validateStack, which the engine runs
// in previews too on each resource's outputs (pulumi pkg
// resource/deploy/deployment_executor.go, step_generator.go AnalyzeStack);
// validateResource gets the inputs. Full, when it says so,
// keeps every output for them. A resource the program registers itself,
// even with the component as its parent, keeps them: a Go or YAML program
// reads a missing output as unknown in a preview (pulumi sdk/go/pulumi/
// context.go resolve). A real Create (an up) returns the whole state.
type PreviewEchoes struct {
	// Full reports whether the provider's configuration keeps every output
	// in previews; nil means no.
	Full func() bool
}

// echoChildren are the URNs RegisterEcho was given, process-wide: the
// Create of a child is served by the provider process that constructed
// its component; another process knows none and trims nothing.
var echoChildren sync.Map

// RegisterEcho says that urn is a resource a component registers and
// whose outputs it reads only through KeepOutputs: its preview Create may
// drop its echoed inputs. Call it before registering the resource.
func RegisterEcho(urn presource.URN) { echoChildren.Store(urn, struct{}{}) }

// EchoRegistered reports whether RegisterEcho was given urn.
func EchoRegistered(urn presource.URN) bool {
	_, ok := echoChildren.Load(urn)
	return ok
}

// Wrap trims the preview Creates of the components' children.
func (pe PreviewEchoes) Wrap(prov p.Provider) p.Provider {
	inner := prov.Create
	if inner == nil {
		return prov
	}
	prov.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
		resp, err := inner(ctx, req)
		if err != nil || !req.DryRun || !EchoRegistered(req.Urn) || (pe.Full != nil && pe.Full()) {
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
