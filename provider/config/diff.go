package config

import (
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// Diff is the provider configuration's diff (framework.ConfigDiff says why
// infer's is not used). Here:
//   - rotating apiToken is no change at all (the new token is used anyway);
//   - endpoint forms that normalize equally are no change;
//   - any other change is an in-place update, never a replace;
//   - offlinePreview and fullPreviewOutputs are how a preview runs, not
//     properties of anything the provider manages: turning them on or off
//     is no change.
var Diff = framework.ConfigDiff{
	Keys:  []string{"endpoint", "insecure", "caCert", "requestTimeout"},
	Equal: configValuesEqual,
}

// configValuesEqual compares config values by meaning. Values from the CLI
// may arrive as strings ("true", "60") rather than typed.
func configValuesEqual(key string, o, n property.Value) bool {
	if o.IsComputed() || n.IsComputed() {
		return false
	}
	os, ns := plain(o), plain(n)
	switch key {
	case "endpoint":
		if os == ns {
			return true
		}
		on, err1 := pve.NormalizeEndpoint(os)
		nn, err2 := pve.NormalizeEndpoint(ns)
		return err1 == nil && err2 == nil && on == nn
	case "insecure":
		ob, _ := strconv.ParseBool(orDefault(os, "false"))
		nb, _ := strconv.ParseBool(orDefault(ns, "false"))
		return ob == nb
	case "caCert":
		return strings.TrimSpace(os) == strings.TrimSpace(ns)
	case "requestTimeout":
		return orDefault(os, "60") == orDefault(ns, "60")
	}
	return os == ns
}

// plain renders a scalar config value as a string, unwrapping secrets.
func plain(v property.Value) string {
	switch {
	case v.IsNull():
		return ""
	case v.IsString():
		return v.AsString()
	case v.IsBool():
		return strconv.FormatBool(v.AsBool())
	case v.IsNumber():
		return strconv.FormatFloat(v.AsNumber(), 'f', -1, 64)
	}
	return v.GoString()
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return strings.TrimSpace(s)
}
