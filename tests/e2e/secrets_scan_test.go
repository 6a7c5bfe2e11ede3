package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/leakscan"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// Issue 6: no secret the stack holds may appear in plain text in any CLI
// output (text and --json), in the provider's logs at -v=9, or in the state
// outside its encrypted values, over a whole create/update/refresh/destroy
// cycle of the low-level resources against the lab: the Image Factory
// schematic, the ISO download, the VM, the machine secrets, the machine
// configuration (with a proxy password in a patch), its apply, bootstrap,
// kubeconfig and talosconfig.

// scanProgram is the YAML program; patch is a YAML flow mapping, tags the
// VM's tags.
func scanProgram(addr, gateway netip.Addr, factoryURL, patch, tags string) string {
	return fmt.Sprintf(`variables:
  cpConfig:
    fn::invoke:
      function: proxmoxtalos:talos:getMachineConfiguration
      arguments:
        clusterName: scan
        clusterEndpoint: https://%[1]s:6443
        machineType: controlplane
        machineSecrets: ${secrets.machineSecrets}
        talosVersion: v1.12.5
        installImage: ${schematic.installerImage}
        configPatches: [ %[4]q ]
      return: machineConfiguration
  talosconfig:
    fn::invoke:
      function: proxmoxtalos:talos:getClientConfiguration
      arguments:
        clusterName: scan
        clientConfiguration: ${secrets.clientConfiguration}
        endpoints: [ %[1]s ]
        nodes: [ %[1]s ]
      return: talosConfig
resources:
  schematic:
    type: proxmoxtalos:talos:ImageFactorySchematic
    properties:
      factoryUrl: %[3]s
      talosVersion: v1.12.5
      extensions: [ siderolabs/qemu-guest-agent ]
      kernelArgs: [ console=ttyS0 ]
  iso:
    type: proxmoxtalos:proxmox:DownloadFile
    properties: { node: pve1, storage: local, url: "${schematic.isoUrl}", fileName: talos-scan.iso }
  vm:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: scan-cp1
      tags: %[5]s
      cpu: { cores: 2 }
      memory: { dedicated: 2048 }
      disks:
        - { interface: scsi0, storage: local-lvm, size: 10 }
      networkDevices:
        - bridge: vmbr0
      iso: ${iso.volumeId}
      cloudInit:
        storage: local-lvm
        ipConfigs:
          - ipv4: { address: "%[1]s/24", gateway: "%[2]s" }
      agent: { enabled: true, waitForAddress: true }
  secrets:
    type: proxmoxtalos:talos:MachineSecrets
    properties:
      talosVersion: v1.12.5
  apply:
    type: proxmoxtalos:talos:ConfigurationApply
    properties:
      node: %[1]s
      clientConfiguration: ${secrets.clientConfiguration}
      machineConfiguration: ${cpConfig}
      timeouts: { create: 2m, update: 2m }
    options:
      dependsOn: [ "${vm}" ]
  bootstrap:
    type: proxmoxtalos:talos:Bootstrap
    properties:
      node: %[1]s
      clientConfiguration: ${secrets.clientConfiguration}
    options:
      dependsOn: [ "${apply}" ]
  kubeconfig:
    type: proxmoxtalos:talos:Kubeconfig
    properties:
      node: %[1]s
      clientConfiguration: ${secrets.clientConfiguration}
    options:
      dependsOn: [ "${bootstrap}" ]
outputs:
  kubeconfig: ${kubeconfig.kubeconfig}
  talosconfig: ${talosconfig}
  schematicId: ${schematic.schematicId}
`, addr, gateway, factoryURL, patch, tags)
}

// verbose are the flags that put the provider's own logs on stderr: the
// engine relays the plugin's stderr and its log messages as diagnostics
// ("eventSink::..." lines), --debug shows debug diagnostics in the output.
var verbose = []string{"-v=9", "--logtostderr", "--logflow", "--debug"}

// withoutRPCDumps drops the dumps of gRPC payloads that Pulumi's processes
// write at -v=9: the CLI's engine and the YAML language host log every
// property they marshal, secrets included, in plain text (pulumi sdk
// v3.259.0 go/common/resource/plugin/rpc.go, "Marshaling property for
// RPC[...]"), so nothing a provider does keeps secrets out of those lines:
// a CLI -v=9 log is never safe to share. Plugins send theirs through the
// CLI's OTLP log receiver, which drops the sender's name, so the provider's
// own dumps (if it wrote any) would be dropped here too; it writes none:
// it caps its verbosity below 9 (provider.CapLogVerbosity, unit tested).
// Everything else stays: the provider's messages, its stderr (relayed as
// eventSink diagnostics), the engine's other lines.
func withoutRPCDumps(log string) string {
	var b strings.Builder

	for _, line := range strings.SplitAfter(log, "\n") {
		if rpcDump.MatchString(line) {
			b.WriteString("(RPC payload dump omitted)\n")
			continue
		}

		b.WriteString(line)
	}

	return b.String()
}

var rpcDump = regexp.MustCompile(`^\{"time":"[^"]*","level":"[A-Z]+","msg":"(?:Un)?[Mm]arshaling property for RPC\[`)

func TestNoSecretLeaksInOutputLogsOrState(t *testing.T) {
	t.Parallel()

	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{})

	addr, gateway := l.Address(11), l.Address(1)

	// Secrets of our own in a patch: a proxy password, rotated by the update.
	const proxy1, proxy2 = "scan-proxy-password-one", "scan-proxy-password-two"

	patch := func(password, label string) string {
		return "machine: {nodeLabels: {scan: " + label + "}, env: {https_proxy: 'http://admin:" + password + "@proxy.lan:3128'}}"
	}

	p := harness.NewYAMLProject(t, env, "secretscan", scanProgram(addr, gateway, l.FactoryURL(), patch(proxy1, "one"), "[scan]"))
	p.ConfigureLab(t, labConfig)

	var runs []scanned

	run := func(what string, args ...string) harness.Result {
		t.Helper()

		r := p.Run(t, args...)
		if r.ExitCode != 0 {
			t.Fatalf("%s failed: %s", what, r)
		}

		stderr := r.Stderr
		if slices.Contains(args, "--logflow") {
			stderr = withoutRPCDumps(stderr)
		}

		runs = append(runs, scanned{what + " stdout", r.Stdout}, scanned{what + " stderr", stderr})

		return r
	}

	// Create: preview in text and JSON, up with the provider's logs.
	run("create preview --diff", "preview", "--diff")
	run("create preview --json", "preview", "--json")
	run("up -v=9", append([]string{"up", "--yes", "--skip-preview", "--diff"}, verbose...)...)
	run("no-change preview --diff --json", "preview", "--diff", "--json", "--expect-no-changes")

	// Update: another password and label in the configuration, another tag
	// on the VM.
	p.WriteProgram(t, "secretscan", scanProgram(addr, gateway, l.FactoryURL(), patch(proxy2, "two"), "[scan, two]"))
	run("update preview --diff", "preview", "--diff")
	run("update preview --diff -v=9", append([]string{"preview", "--diff"}, verbose...)...)
	run("update preview --json", "preview", "--json")
	run("up --json -v=9", append([]string{"up", "--yes", "--skip-preview", "--json"}, verbose...)...)

	// Refresh in both modes, then the state.
	run("refresh --diff -v=9", append([]string{"refresh", "--yes", "--skip-preview", "--diff"}, verbose...)...)
	run("refresh --json", "refresh", "--yes", "--skip-preview", "--json")
	run("stack output", "stack", "output")
	run("stack output --json", "stack", "output", "--json")

	state := p.StackExport(t)
	runs = append(runs, scanned{"stack export", state})

	stackFile, err := os.ReadFile(filepath.Join(p.Dir, "Pulumi.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	runs = append(runs, scanned{"Pulumi.test.yaml", string(stackFile)})

	// Every secret the stack holds, read from the decrypted state, plus
	// the proxy password the first configuration held (no longer in the
	// state after the update).
	set, err := leakscan.FromExport([]byte(p.MustRun(t, "stack", "export", "--show-secrets").Stdout))
	if err != nil {
		t.Fatal(err)
	}

	set.Add("the first configuration's proxy password", proxy1)
	set.Add("the second configuration's proxy password", proxy2)

	// Destroy in both modes: a preview in text, the real one in JSON with logs.
	run("destroy --preview-only", "destroy", "--preview-only", "--diff")
	run("destroy --json -v=9", append([]string{"destroy", "--yes", "--skip-preview", "--json"}, verbose...)...)

	// The file backend's own files: the checkpoint, its backups and the
	// update history.
	runs = append(runs, backendFiles(t, env.Backend)...)

	checkCollected(t, set)
	checkScanCatches(t, set, runs)

	// LEAKSCAN_DUMP=<dir> keeps every scanned text for a person to read
	// (what the scan reads: without the RPC dumps that hold secrets).
	if dir := os.Getenv("LEAKSCAN_DUMP"); dir != "" {
		for i, s := range runs {
			name := fmt.Sprintf("%02d-%s.txt", i, strings.NewReplacer(" ", "_", "/", "_").Replace(s.name))
			if err := os.WriteFile(filepath.Join(dir, name), []byte(s.text), 0o600); err != nil {
				t.Error(err)
			}
		}
	}

	needles := set.Needles()
	for _, s := range runs {
		for _, f := range leakscan.Scan(s.name, s.text, needles) {
			t.Errorf("leak: %s", f)
		}
	}

	if vms := l.VMs(); len(vms) != 0 {
		t.Errorf("destroy left %d VMs", len(vms))
	}
}

type scanned struct{ name, text string }

// checkCollected makes sure the scan looks for what the stack really holds:
// a scan with nothing to look for passes vacuously.
func checkCollected(t *testing.T, set *leakscan.Set) {
	t.Helper()

	var origins strings.Builder
	for _, s := range set.Secrets {
		origins.WriteString(s.Origin + "\n")
	}

	for _, want := range []string{
		"apiToken (token secret)", "bundle certs.os.key", "bundle cluster.secret", "clientConfiguration.clientKey",
		"kubeconfig users.user.client-key-data", "talosconfig contexts.scan.key", "machine configuration secret #",
		"proxy password",
	} {
		if !strings.Contains(origins.String(), want) {
			t.Errorf("the scan does not look for %q; it collected:\n%s", want, origins.String())
		}
	}
}

// backendFiles reads every file of a file backend (checkpoints, backups,
// history), decompressing gzip.
func backendFiles(t *testing.T, dir string) []scanned {
	t.Helper()

	var out []scanned

	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}

		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}

		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}

			if data, err = io.ReadAll(zr); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}

		rel, _ := filepath.Rel(dir, path) //nolint:errcheck // under dir
		out = append(out, scanned{"backend file " + rel, string(data)})

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if len(out) < 3 {
		t.Fatalf("the file backend holds %d files; expected a checkpoint, backups and history", len(out))
	}

	return out
}

// checkScanCatches is the negative control inside the real run: the same
// outputs with secrets of this stack planted the way a careless log line or
// a --json diagnostic would carry them must fail the scan.
func checkScanCatches(t *testing.T, set *leakscan.Set, runs []scanned) {
	t.Helper()

	var jsonOut string

	for _, s := range runs {
		if strings.HasPrefix(s.name, "up --json") && strings.HasSuffix(s.name, "stdout") {
			jsonOut = s.text
		}
	}

	for _, want := range []string{"bundle certs.os.key", "kubeconfig users.user.client-key-data", "(token secret)", "machine configuration secret #0"} {
		var secret *leakscan.Secret

		for i := range set.Secrets {
			if strings.HasSuffix(set.Secrets[i].Origin, want) {
				secret = &set.Secrets[i]
				break
			}
		}

		if secret == nil {
			t.Errorf("negative control: no secret %q collected", want)
			continue
		}

		value := secret.Value
		if decoded, err := base64.StdEncoding.DecodeString(value); err == nil {
			value = string(decoded) // a PEM, as a log line would print it
		}

		msg, _ := json.Marshal("debug: " + value) //nolint:errcheck // a string
		planted := strings.Replace(jsonOut, "\n", "\n"+`{"diagnosticEvent":{"message":`+string(msg)+`,"severity":"debug"}}`+"\n", 1)

		if len(leakscan.Scan("planted", planted, set.Needles())) == 0 {
			t.Errorf("negative control: the scan misses %s planted in the up --json output", want)
		}
	}
}
