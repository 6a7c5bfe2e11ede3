package cluster

import (
	"context"
	"reflect"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// The component's inputs are plain values: the plan is computed from them
// when the component is constructed (see TalosClusterArgs). Two workarounds
// of infer v1.5.0 (see package framework) keep it so: the schema marks every
// input plain, nested ones included, except fields whose Go type is a
// pulumi.Input (the Proxmox CCM token secret), and Construct refuses inputs
// that are not known yet.

// PlainInputs is the schema fix that marks the component's inputs plain,
// except those that only reach the machine configurations (outputCapable).
func PlainInputs() framework.SchemaFix {
	plain := framework.PlainInputs(tokenComponent, reflect.TypeFor[TalosClusterArgs]())
	return func(spec *pschema.PackageSpec) error {
		if err := plain(spec); err != nil {
			return err
		}
		return markOutputCapable(spec)
	}
}

// outputCapable are the component's inputs, by schema type and property,
// that may be another resource's output: they do not count or place nodes
// (the machine configurations; the VMs' network settings); those that
// reach only the machine configurations may be secrets too (acceptInputValues gives Construct their plain
// value, a placeholder while unknown in a preview). Their Go type stays
// plain because the plan is computed from plain arguments.
var outputCapable = map[string][]string{
	tokenComponent:                  {"patches", "workerPatches", "nodePatches", "extraManifests"},
	"ControlPlane":                  {"patches"},
	"WorkerPool":                    {"patches"},
	"NodeSettings":                  {"patches"},
	"RegistryMirror":                {"endpoints", "auth"},
	"RegistryAuth":                  {"username", "password", "identityToken"},
	"InlineManifest":                {"contents"},
	"Cni":                           {"manifestUrls"},
	"GitOps":                        {"installManifests"},
	"GitRepository":                 {"url"},
	"CloudControllerManager":        {"talosCcmManifest", "servingCertApproverManifest"},
	"ProxmoxCloudControllerManager": {"manifest"},
	// Network settings that reach only the VMs' devices and cloud-init
	// drives (vm_inputs.go): unknown in a preview, each VM shows them as
	// changing once known.
	"Network": {"bridge", "vlan", "mtu", "dnsServers", "searchDomain"},
	"Nic":     {"bridge", "vlan", "mtu"},
}

func markOutputCapable(spec *pschema.PackageSpec) error {
	prefix := tokenComponent[:strings.LastIndex(tokenComponent, ":")+1]
	for typ, props := range outputCapable {
		if typ == tokenComponent {
			res := spec.Resources[typ]
			for _, name := range props {
				if prop, ok := res.InputProperties[name]; ok {
					unplain(&prop.TypeSpec)
					res.InputProperties[name] = prop
				}
			}
			spec.Resources[typ] = res
			continue
		}
		t, ok := spec.Types[prefix+typ]
		if !ok {
			continue
		}
		for _, name := range props {
			if prop, ok := t.Properties[name]; ok {
				unplain(&prop.TypeSpec)
				t.Properties[name] = prop
			}
		}
		spec.Types[prefix+typ] = t
	}
	return nil
}

// unplain clears plain on a property, its list items and map values (not
// on the object types it refers to).
func unplain(ts *pschema.TypeSpec) {
	ts.Plain = false
	if ts.Items != nil {
		unplain(ts.Items)
	}
	if ts.AdditionalProperties != nil {
		unplain(ts.AdditionalProperties)
	}
}

// ConstructGuard is what Construct does with a TalosCluster's inputs
// before infer fills TalosClusterArgs (framework.ConstructGuard says why):
// secrets and unknowns where they only reach the machine configurations or
// the VMs' network settings are accepted (acceptInputValues), every other
// unknown input is refused by name (refuseUnknownInputs), and the secret
// texts are scrubbed from the construct's errors.
func ConstructGuard() framework.ConstructGuard {
	return framework.ConstructGuard{
		Token: tokenComponent,
		Prepare: func(ctx context.Context, req p.ConstructRequest) (context.Context, p.ConstructRequest, error) {
			ctx, req, err := acceptInputValues(ctx, req)
			if err != nil {
				return ctx, req, err
			}
			if err := refuseUnknownInputs(req); err != nil {
				return ctx, req, scrubSecrets(err, secretValues(ctx))
			}
			return withComponentURN(ctx, req), req, nil
		},
		Scrub: func(ctx context.Context, err error) error { return scrubSecrets(err, secretValues(ctx)) },
	}
}
