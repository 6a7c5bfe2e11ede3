// Package talosapi talks to Talos nodes through the Talos machinery client
// (github.com/siderolabs/talos/pkg/machinery/client), the same client talosctl
// uses. It decides per node whether to speak to the maintenance-mode server
// (insecure TLS, only what maintenance mode serves) or to apid over mTLS with
// the cluster's client credentials, applies machine configurations and waits
// until the node runs them, bootstraps etcd once, fetches the admin
// kubeconfig, upgrades and resets nodes, and checks cluster health.
//
// The package has no Pulumi types. Every long operation honours the context
// (its deadline is the resource timeout), reports progress through
// Options.Progress, and ends with an error that says which node, what was
// tried and what was last seen. Secrets (configs, keys, kubeconfigs) never
// appear in errors or progress messages.
package talosapi
