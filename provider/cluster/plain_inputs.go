package cluster

import (
	"fmt"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// An input that is not known when the component is constructed (the output
// of a resource that does not exist yet) cannot be planned with: the
// framework would hand the component its zero value, planning silently
// without it (no VIP, a missing subnet reported as "required"). Construct
// refuses it instead and names the input.
func refuseUnknownInputs(req p.ConstructRequest) error {
	paths := unknownInputs(req.Inputs)
	if len(paths) == 0 {
		return nil
	}
	return fmt.Errorf("TalosCluster %s: %s %s not known yet (an output of a resource that "+
		"does not exist yet): the cluster is planned from %s when it is constructed, also in preview, so %s must "+
		"be a plain value: a literal, a stack configuration value or the output of a resource that already "+
		"exists. Only inputs that do not count or place nodes may come from resources created in the same update: "+
		"patches, manifests, registry mirrors, the CCM token secret, and the network's bridge, vlan, mtu, "+
		"dnsServers and searchDomain",
		req.Urn.Name(), strings.Join(paths, ", "), isAre(len(paths)), itThem(len(paths)), itThem(len(paths)))
}

// mayBeUnknown are the inputs whose Go type is a pulumi.Input: they reach
// only the machine configurations, which are outputs anyway. (The other
// inputs that only reach them are replaced by acceptInputValues first.)
var mayBeUnknown = map[string]bool{"cloudControllerManager.proxmox.tokenSecret": true}

// unknownInputs lists the paths of unknown values in the inputs.
func unknownInputs(m property.Map) []string {
	return framework.UnknownInputs(m, func(path string) bool { return mayBeUnknown[path] })
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
