// Package realtools prepares the real talosctl and kubectl commands `make demo` ends with:
// `talosctl get members` through the stack's talosconfig output and `kubectl get nodes -o
// wide` through its kubeconfig output. The e2e test of the demo's example runs the same
// commands and checks what they print, so what the demo shows is tested.
package realtools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
)

// TalosMembers is `talosctl get members` on the first endpoint of talosconfig's current
// context (cluster discovery's view of every node), with the talosconfig written to dir
// and HOME there too. It returns the command and that endpoint.
func TalosMembers(bin, talosconfig, dir string) (*exec.Cmd, string, error) {
	cfg, err := clientconfig.FromString(talosconfig)
	if err != nil {
		return nil, "", fmt.Errorf("the talosconfig output does not parse: %w", err)
	}
	ctx := cfg.Contexts[cfg.Context]
	if ctx == nil || len(ctx.Endpoints) == 0 {
		return nil, "", fmt.Errorf("the talosconfig output has no endpoint in its context %q", cfg.Context)
	}
	path := filepath.Join(dir, "talosconfig")
	if err := os.WriteFile(path, []byte(talosconfig), 0o600); err != nil {
		return nil, "", err
	}
	endpoint := ctx.Endpoints[0]
	cmd := exec.Command(bin, "--talosconfig", path, "--endpoints", endpoint, "--nodes", endpoint, "get", "members")
	cmd.Env = append(os.Environ(), "HOME="+dir)
	return cmd, endpoint, nil
}

// Kubectl is `kubectl <args>` with kubeconfig written to dir.
func Kubectl(bin, kubeconfig, dir string, args ...string) (*exec.Cmd, error) {
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", path}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	return cmd, nil
}

// KubectlNodesArgs are the arguments the demo shows the nodes with.
var KubectlNodesArgs = []string{"get", "nodes", "-o", "wide"}
