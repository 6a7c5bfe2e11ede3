// Command demo is what `make demo` runs: it starts the lab in the background, runs
// `pulumi up` on a Pulumi YAML project from examples/, shows the stack outputs and what the
// lab's Proxmox API now holds, runs `pulumi destroy`, shows the lab empty (no VM, nothing on
// any storage) and stops the lab.
//
// Everything is hermetic: the project's own CLI (.tools/bin), PULUMI_HOME and a file
// backend under .cache/demo, a passphrase, no plugin downloads, and the provider found
// through plugins.providers[].path in the example's Pulumi.yaml.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	example := flag.String("example", "examples/yaml-cluster", "Pulumi YAML project to run")
	flag.Parse()
	if err := run(*example); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		os.Exit(1)
	}
}

func run(example string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	work := filepath.Join(root, ".cache", "demo")
	if err := os.RemoveAll(work); err != nil { // every demo starts from an empty backend
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	projectDir := filepath.Join(root, example)
	if _, err := os.Stat(filepath.Join(projectDir, "Pulumi.yaml")); err != nil {
		return fmt.Errorf("no Pulumi project at %s: %w", example, err)
	}

	step("Starting the lab (Proxmox VE API + Talos node simulator) on loopback")
	lab, err := startLab(root, work)
	if err != nil {
		return err
	}
	defer lab.stop()
	fmt.Printf("lab endpoint %s (log: %s)\n", lab.info.Endpoint, rel(root, lab.logPath))

	api, err := newPVEAPI(lab.info)
	if err != nil {
		return err
	}
	cli := newPulumi(root, work, projectDir)
	if err := cli.setup(lab.info); err != nil {
		return err
	}

	step("pulumi up")
	if err := cli.run("up", "--yes", "--skip-preview"); err != nil {
		return err
	}
	step("Stack outputs")
	if err := cli.run("stack", "output", "--json"); err != nil {
		return err
	}
	step("What the lab's Proxmox VE API holds now")
	if err := showVMs(api, true); err != nil {
		return err
	}
	if err := showStorage(api, false); err != nil {
		return err
	}
	if err := showKubernetesNodes(cli); err != nil {
		return err
	}
	if err := showTalosMembers(root, work, cli); err != nil {
		return err
	}

	step("pulumi destroy")
	if err := cli.run("destroy", "--yes", "--skip-preview"); err != nil {
		return err
	}
	step("The lab after destroy")
	if err := showVMs(api, false); err != nil {
		return err
	}
	if err := showStorage(api, true); err != nil {
		return err
	}
	step("Done: stopping the lab")
	return nil
}

func step(title string) { fmt.Printf("\n==> %s\n", title) }

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}
