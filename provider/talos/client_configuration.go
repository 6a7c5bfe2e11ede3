// Package talos is the Pulumi module `talos`: Talos resources and functions
// over the pure talosconfig package and the node-facing talosapi package.
package talos

import (
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// ClientConfiguration is what a Talos API client needs: the cluster's Talos
// API CA and an admin client certificate and key, all PEM. MachineSecrets
// outputs it; getClientConfiguration and the node-facing resources take it.
type ClientConfiguration struct {
	CACertificate     string `pulumi:"caCertificate"`
	ClientCertificate string `pulumi:"clientCertificate"`
	ClientKey         string `pulumi:"clientKey" provider:"secret"`
}

// Annotate describes the fields.
func (c *ClientConfiguration) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "Credentials for the Talos API (the `ca`, `crt` and `key` of a talosconfig context), PEM-encoded.")
		a.Describe(&c.CACertificate, "The cluster's Talos API CA certificate (PEM); nodes present server certificates signed by it.")
		a.Describe(&c.ClientCertificate, "Admin client certificate (PEM, role os:admin) signed by the Talos API CA.")
		a.Describe(&c.ClientKey, "Private key of the admin client certificate (PEM). Secret.")
	})
}
