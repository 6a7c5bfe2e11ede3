package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
)

// showTalosMembers runs the real talosctl (make tools builds it into .tools/bin) with the
// example's talosconfig output: `talosctl get members` on the first endpoint lists every
// node as cluster discovery sees it. Skipped when talosctl is not built or the example has
// no talosconfig output.
func showTalosMembers(root, work string, cli *pulumiCLI) error {
	bin := filepath.Join(root, ".tools", "bin", "talosctl")
	if _, err := os.Stat(bin); err != nil {
		fmt.Printf("\n(talosctl is not built: `make tools` builds it, then the demo shows `talosctl get members`)\n")
		return nil
	}
	tc, ok, err := cli.output("talosconfig")
	if err != nil || !ok || strings.TrimSpace(tc) == "" {
		return err
	}
	cfg, err := clientconfig.FromString(tc)
	if err != nil {
		return fmt.Errorf("the talosconfig output does not parse: %w", err)
	}
	ctx := cfg.Contexts[cfg.Context]
	if ctx == nil || len(ctx.Endpoints) == 0 {
		return fmt.Errorf("the talosconfig output has no endpoint in its context %q", cfg.Context)
	}
	path := filepath.Join(work, "talosconfig")
	if err := os.WriteFile(path, []byte(tc), 0o600); err != nil {
		return err
	}
	endpoint := ctx.Endpoints[0]
	args := []string{"--talosconfig", path, "--endpoints", endpoint, "--nodes", endpoint, "get", "members"}
	step("talosctl --nodes " + endpoint + " get members (the real talosctl, through the talosconfig output)")
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "HOME="+work)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("talosctl get members: %w", err)
	}
	return nil
}
