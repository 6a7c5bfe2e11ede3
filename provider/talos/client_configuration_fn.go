package talos

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// GetClientConfiguration renders a talosconfig.
type GetClientConfiguration struct{}

// GetClientConfigurationArgs are the inputs.
type GetClientConfigurationArgs struct {
	ClusterName         string              `pulumi:"clusterName"`
	Endpoints           []string            `pulumi:"endpoints"`
	Nodes               []string            `pulumi:"nodes,optional"`
	ClientConfiguration ClientConfiguration `pulumi:"clientConfiguration" provider:"secret"`
}

// GetClientConfigurationResult is the output.
type GetClientConfigurationResult struct {
	TalosConfig string `pulumi:"talosConfig" provider:"secret"`
}

// Annotate describes the function.
func (f *GetClientConfiguration) Annotate(a infer.Annotator) {
	a.Describe(f, docs.Description("proxmoxtalos:talos:getClientConfiguration"))
}

// Annotate describes the inputs.
func (a *GetClientConfigurationArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.ClusterName, "Name of the talosconfig context (use the cluster name).")
		an.Describe(&a.Endpoints, "Addresses talosctl connects to: the control plane nodes' own addresses. Not the VIP, "+
			"which only answers once etcd runs.")
		an.Describe(&a.Nodes, "Default target nodes of the context. Default: the first endpoint, so that `talosctl "+
			"kubeconfig` and `etcd members` work without `-n` (they need one control plane).")
		an.Describe(&a.ClientConfiguration, "The `clientConfiguration` output of MachineSecrets. Secret.")
	})
}

// Annotate describes the output.
func (r *GetClientConfigurationResult) Annotate(a infer.Annotator) {
	a.Describe(&r.TalosConfig, "The talosconfig YAML. Secret: it holds the admin client key.")
}

// Invoke renders the talosconfig.
func (f *GetClientConfiguration) Invoke(ctx context.Context, req infer.FunctionRequest[GetClientConfigurationArgs]) (infer.FunctionResponse[GetClientConfigurationResult], error) {
	in := req.Input
	cc := in.ClientConfiguration
	if _, err := talosconfig.CertificateNotAfter([]byte(cc.ClientCertificate)); err != nil {
		return infer.FunctionResponse[GetClientConfigurationResult]{}, fmt.Errorf("clientConfiguration.clientCertificate: %w; pass the clientConfiguration output of MachineSecrets", err)
	}
	nodes := in.Nodes
	if len(nodes) == 0 && len(in.Endpoints) > 0 {
		nodes = in.Endpoints[:1]
	}
	text, err := talosconfig.ClientConfiguration(in.ClusterName, in.Endpoints, nodes, []byte(cc.CACertificate),
		talosconfig.ClientCertificate{CertPEM: []byte(cc.ClientCertificate), KeyPEM: []byte(cc.ClientKey)})
	if err != nil {
		return infer.FunctionResponse[GetClientConfigurationResult]{}, fmt.Errorf("getClientConfiguration: %w", err)
	}
	return infer.FunctionResponse[GetClientConfigurationResult]{Output: GetClientConfigurationResult{TalosConfig: text}}, nil
}
