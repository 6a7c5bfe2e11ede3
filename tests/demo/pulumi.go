package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/tests/clienv"
)

// pulumiCLI runs the project's own Pulumi CLI in the example folder with a hermetic
// environment. The stack's config lives in .cache/demo (--config-file), so the example
// folder in the repository is left untouched.
type pulumiCLI struct {
	bin, dir, configFile string
	env                  []string
}

const stack = "demo"

func newPulumi(root, work, projectDir string) *pulumiCLI {
	tools := filepath.Join(root, ".tools", "bin")
	env := clienv.Hermetic(tools, filepath.Join(work, "pulumi-home"), filepath.Join(work, "backend"), "proxmoxtalos-demo")
	return &pulumiCLI{
		bin:        filepath.Join(tools, "pulumi"),
		dir:        projectDir,
		configFile: filepath.Join(work, "Pulumi."+stack+".yaml"),
		env:        env,
	}
}

// setup creates the stack and points the provider at the lab. Values go through stdin so
// the token is never on a command line.
func (c *pulumiCLI) setup(lab labInfo) error {
	for _, d := range []string{"pulumi-home", "backend"} {
		if err := os.MkdirAll(filepath.Join(filepath.Dir(c.configFile), d), 0o755); err != nil {
			return err
		}
	}
	// `stack init` takes no --config-file: it writes the passphrase's salt into the project
	// folder's Pulumi.demo.yaml. Move it beside the demo's other state so the example folder
	// stays as committed; a file there already is not the demo's (its backend is new).
	projectConfig := filepath.Join(c.dir, "Pulumi."+stack+".yaml")
	if b, err := os.ReadFile(projectConfig); err == nil {
		if !onlySalt(string(b)) {
			return fmt.Errorf("%s exists and holds more than a salt: the demo keeps its stack config in %s "+
				"and would not overwrite yours; move that file away and run the demo again", projectConfig, c.configFile)
		}
		if err := os.Remove(projectConfig); err != nil { // a salt an earlier demo left behind
			return err
		}
	}
	if err := c.run("stack", "init", stack); err != nil {
		return err
	}
	if err := os.Rename(projectConfig, c.configFile); err != nil {
		return fmt.Errorf("moving the stack's salt out of the example folder: %w", err)
	}
	prefix, err := addressPrefix(lab.AddressBlock)
	if err != nil {
		return err
	}
	for _, kv := range []struct {
		key, value string
		secret     bool
	}{
		{"proxmoxtalos:endpoint", lab.Endpoint, false},
		{"proxmoxtalos:apiToken", lab.APIToken, true},
		{"proxmoxtalos:caCert", lab.CACert, false},
		{"addressPrefix", prefix, false}, // the example's own key: where its VMs get addresses
		{"factoryUrl", lab.FactoryURL, false},
	} {
		args := []string{"config", "set", kv.key}
		if kv.secret {
			args = append(args, "--secret")
		}
		if err := c.runInput(strings.NewReader(kv.value), args...); err != nil {
			return err
		}
	}
	return nil
}

// onlySalt tells whether a stack config file holds nothing but the passphrase's salt.
func onlySalt(text string) bool {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return len(lines) == 1 && strings.HasPrefix(lines[0], "encryptionsalt: ")
}

// addressPrefix returns "127.X.Y" for the lab's block 127.X.Y.0/24.
func addressPrefix(block string) (string, error) {
	p, err := netip.ParsePrefix(block)
	if err != nil || p.Bits() != 24 || !p.Addr().Is4() {
		return "", fmt.Errorf("the lab's address block %q is not an IPv4 /24", block)
	}
	a := p.Masked().Addr().As4()
	return fmt.Sprintf("%d.%d.%d", a[0], a[1], a[2]), nil
}

func (c *pulumiCLI) run(args ...string) error { return c.runInput(nil, args...) }

// output returns one string stack output, secrets included, without printing it. ok is
// false when the stack has no output of that name (an example without a kubeconfig); a
// failing CLI is an error, never taken for a missing output.
func (c *pulumiCLI) output(name string) (value string, ok bool, err error) {
	cmd := exec.Command(c.bin, "--non-interactive", "stack", "output", "--json", "--show-secrets", "--stack", stack)
	cmd.Dir, cmd.Env = c.dir, c.env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// stderr never holds an output value: the CLI prints values on stdout only.
		return "", false, fmt.Errorf("pulumi stack output --json: %w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	var outputs map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &outputs); err != nil {
		return "", false, fmt.Errorf("pulumi stack output --json printed no JSON object: %w", err)
	}
	v, ok := outputs[name]
	if !ok {
		return "", false, nil
	}
	s, isString := v.(string)
	if !isString {
		return "", false, fmt.Errorf("stack output %q is a %T, not a string", name, v)
	}
	return s, true, nil
}

func (c *pulumiCLI) runInput(stdin *strings.Reader, args ...string) error {
	full := append([]string{"--non-interactive"}, args...)
	if args[0] != "stack" || args[1] != "init" {
		full = append(full, "--stack", stack)
	}
	if args[0] != "stack" { // up, preview, destroy, config take the stack's config file
		full = append(full, "--config-file", c.configFile)
	}
	cmd := exec.Command(c.bin, full...)
	cmd.Dir, cmd.Env = c.dir, c.env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pulumi %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
