package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/tests/demo/realtools"
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
	cmd, endpoint, err := realtools.TalosMembers(bin, tc, work)
	if err != nil {
		return err
	}
	step("talosctl --nodes " + endpoint + " get members (the real talosctl, through the talosconfig output)")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("talosctl get members: %w", err)
	}
	return nil
}
