package framework

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// ConfigDiff is the diff of the provider configuration that replaces
// infer's: infer v1.5.0 replaces the provider on any config change
// (infer/configuration.go diffConfig, pulumi/pulumi-go-provider#409), and a
// replaced provider replaces every resource it manages. Here a change of one
// of Keys is an in-place update (never a replace), and a change of any
// other key (a rotated token) is no change at all. The package that owns the
// configuration says which keys count and when two values mean the same.
type ConfigDiff struct {
	// Keys are the configuration keys whose change is an update.
	Keys []string
	// Equal compares a key's old and new value by meaning (an endpoint in
	// two forms, "false" from the CLI and false).
	Equal func(key string, old, new property.Value) bool
}

// Diff compares two provider configurations.
func (d ConfigDiff) Diff(_ context.Context, req p.DiffRequest) (p.DiffResponse, error) {
	olds := req.OldInputs
	if olds.Len() == 0 {
		olds = req.State
	}
	news := req.Inputs
	detailed := map[string]p.PropertyDiff{}
	for _, key := range d.Keys {
		o, n := olds.Get(key), news.Get(key)
		if d.Equal(key, o, n) {
			continue
		}
		kind := p.Update
		switch {
		case isAbsent(o):
			kind = p.Add
		case isAbsent(n):
			kind = p.Delete
		}
		detailed[key] = p.PropertyDiff{Kind: kind, InputDiff: true}
	}
	return p.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
}

func isAbsent(v property.Value) bool {
	return v.IsNull() || (v.IsString() && v.AsString() == "")
}
