package talos

import (
	"context"
	"net/http"
)

// applyBootstrapRBAC applies the bindings of Talos's bootstrap manifests
// that let kubelets request certificates (Talos's manifest controller,
// internal/app/machined/pkg/controllers/k8s/internal/manifests, the
// "system-bootstrap-*" ClusterRoleBindings talosctl upgrade-k8s lists):
// server-side apply with Talos as the field manager.
func applyBootstrapRBAC(ctx context.Context, c *kubeClient) error {
	bindings := []struct {
		name, role string
		groups     []string
	}{
		{"system-bootstrap-approve-node-client-csr", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", []string{"system:bootstrappers:nodes"}},
		{"system-bootstrap-node-bootstrapper", "system:node-bootstrapper", []string{"system:bootstrappers:nodes", "system:nodes"}},
		{"system-bootstrap-node-renewal", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", []string{"system:nodes"}},
	}

	for _, b := range bindings {
		subjects := make([]obj, 0, len(b.groups))
		for _, g := range b.groups {
			subjects = append(subjects, obj{"kind": "Group", "name": g, "apiGroup": "rbac.authorization.k8s.io"})
		}

		crb := obj{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": obj{"name": b.name},
			"roleRef":  obj{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": b.role},
			"subjects": subjects,
		}

		path := "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" + b.name + "?fieldManager=talos&force=true"
		if err := c.do(ctx, http.MethodPatch, path, "application/apply-patch+yaml", crb, nil); err != nil {
			return err
		}
	}

	return nil
}
