package cluster

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// An input that is not known when the component is constructed (the output
// of a resource that does not exist yet) cannot be planned with: the
// framework would hand the component its zero value, planning silently
// without it (no VIP, a missing subnet reported as "required"). Construct
// refuses it instead and names the input.
func refuseUnknownInputs(construct func(context.Context, p.ConstructRequest) (p.ConstructResponse, error)) func(context.Context, p.ConstructRequest) (p.ConstructResponse, error) {
	return func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		if req.Urn.Type().String() == tokenComponent {
			if paths := unknownInputs(req.Inputs); len(paths) > 0 {
				return p.ConstructResponse{}, fmt.Errorf("TalosCluster %s: %s %s not known yet (an output of a resource that "+
					"does not exist yet): the cluster is planned from %s when it is constructed, also in preview, so %s must "+
					"be a plain value: a literal, a stack configuration value or the output of a resource that already "+
					"exists. Only inputs that do not count or place nodes may come from resources created in the same update: "+
					"patches, manifests, registry mirrors, the CCM token secret, and the network's bridge, vlan, mtu, "+
					"dnsServers and searchDomain",
					req.Urn.Name(), strings.Join(paths, ", "), isAre(len(paths)), itThem(len(paths)), itThem(len(paths)))
			}
		}
		return construct(ctx, req)
	}
}

// mayBeUnknown are the inputs whose Go type is a pulumi.Input: they reach
// only the machine configurations, which are outputs anyway. (The other
// inputs that only reach them are replaced by acceptInputValues first.)
var mayBeUnknown = map[string]bool{"cloudControllerManager.proxmox.tokenSecret": true}

// unknownInputs lists the paths of unknown values in the inputs.
func unknownInputs(m property.Map) []string {
	var out []string
	var walk func(path string, v property.Value)
	walk = func(path string, v property.Value) {
		switch {
		case mayBeUnknown[path]:
		case v.IsComputed():
			out = append(out, path)
		case v.IsMap():
			v.AsMap().AllStable(func(k string, e property.Value) bool {
				walk(joinPath(path, k), e)
				return true
			})
		case v.IsArray():
			v.AsArray().All(func(i int, e property.Value) bool {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
				return true
			})
		}
	}
	m.AllStable(func(k string, v property.Value) bool {
		walk(k, v)
		return true
	})
	return out
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// joinPath appends a key: `.key`, or `["key"]` for map keys such as
// registry hosts.
func joinPath(path, key string) string {
	if identifier.MatchString(key) {
		return path + "." + key
	}
	return fmt.Sprintf("%s[%q]", path, key)
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
