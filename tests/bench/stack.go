package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/clienv"
)

// stack is one Pulumi YAML project with its own hermetic Pulumi environment (PULUMI_HOME,
// file backend, passphrase), the project's own CLI, and the provider reached through the
// benchmark's wrapper (wrap.go), which records the provider's CPU time and peak memory.
// The wrapper is installed as the provider's plugin with `pulumi plugin install`, as the
// documentation tells users (docs/installation-configuration.md), not named by a
// `plugins.providers` path: the YAML language host's schema loader caches the schema of an
// installed, versioned plugin in PULUMI_HOME/schemas (pulumi pkg/codegen/schema/loader.go,
// loadSchemaBytes), while for a path without a version it starts one more provider process
// in every command to ask for the schema. Users pay that process once per plugin version.
type stack struct {
	dir      string // the project folder
	env      []string
	pulumi   string
	rusage   string // where the wrapper appends one line per provider process
	logs     string // folder of the CLI's output, one file per command
	commands int
	ups      int       // successful `up`s so far: the first creates, later ones update
	peaks    *rssPeaks // the run's peak memory per command kind (peaks.go)
}

// clusterShape is what the benchmark's TalosCluster looks like.
type clusterShape struct {
	controlPlanes, workers int
	hosts                  []string
}

func (c clusterShape) String() string { return fmt.Sprintf("%d+%d", c.controlPlanes, c.workers) }

func (c clusterShape) nodes() int { return c.controlPlanes + c.workers }

// newStack writes the project, creates its stack and points the provider at the lab
// through the PROXMOX_VE_* variables (no token on a command line or in a file).
func newStack(b *bench, name string, shape clusterShape, l *labRun) (*stack, error) {
	dir := filepath.Join(b.work, name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	s := &stack{dir: filepath.Join(dir, "project"), pulumi: filepath.Join(b.tools, "pulumi"),
		rusage: filepath.Join(dir, "rusage.jsonl"), logs: filepath.Join(dir, "logs"), peaks: &b.peaks}
	for _, d := range []string{s.dir, s.logs, filepath.Join(dir, "home"), filepath.Join(dir, "backend")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	s.env = append(clienv.Hermetic(b.tools, filepath.Join(dir, "home"), filepath.Join(dir, "backend"), "proxmoxtalos-bench"),
		"NO_COLOR=1",
		"PROXMOX_VE_ENDPOINT="+l.lab.Endpoint(),
		"PROXMOX_VE_API_TOKEN="+l.lab.APIToken(),
		"PROXMOX_VE_CA_CERT="+string(l.lab.CACertPEM()),
		envRealProvider+"="+b.provider,
		envRusage+"="+s.rusage,
	)
	if err := s.write(b, shape, l); err != nil {
		return nil, err
	}
	if _, err := s.run("plugin", "install", "resource", "proxmoxtalos", b.version, "--file", b.wrapper); err != nil {
		return nil, err
	}
	if _, err := s.run("stack", "init", "bench"); err != nil {
		return nil, err
	}
	return s, nil
}

// write (re)writes Pulumi.yaml for the shape: a scale-out is the same project with more
// workers.
func (s *stack) write(b *bench, shape clusterShape, l *labRun) error {
	prefix := l.lab.AddressPrefix()
	var hosts strings.Builder
	for _, h := range shape.hosts {
		fmt.Fprintf(&hosts, "        - node: %s\n", h)
	}
	project := fmt.Sprintf(`name: bench
runtime: yaml
resources:
  cluster:
    type: proxmoxtalos:TalosCluster
    properties:
      clusterName: bench
      image:
        factoryUrl: %s
      hosts:
%s      network:
        subnet: %s.0/24
        gateway: %s.1
        addressRange: { start: %s.10, end: %s.250 }
        dnsServers: ["%s.1"]
      vip: %s.5
      controlPlane:
        count: %d
        size: { cores: 2, memory: 2048, diskSize: 10 }
      workerPools:
        - name: workers
          count: %d
          size: { cores: 2, memory: 2048, diskSize: 10 }
outputs:
  summary: ${cluster.summary}
`, l.lab.FactoryURL(), hosts.String(), prefix, prefix, prefix, prefix, prefix, prefix, shape.controlPlanes, shape.workers)
	return os.WriteFile(filepath.Join(s.dir, "Pulumi.yaml"), []byte(project), 0o644)
}

// measured is one CLI command's figures.
type measured struct {
	wall time.Duration
	// cpu is the provider processes' CPU time (user + system), summed.
	cpu time.Duration
	// rssMiB is the largest peak resident set of a provider process.
	rssMiB float64
	// procs is how many provider processes the command started.
	procs int
	// load is the 1-minute load average when the command started.
	load float64
}

// run runs one CLI command and measures it; its output goes to a log file, named in the
// error when it fails.
func (s *stack) run(args ...string) (measured, error) {
	full := append([]string{"--non-interactive"}, args...)
	if args[0] != "stack" && args[0] != "plugin" {
		full = append(full, "--stack", "bench")
	}
	s.commands++
	logPath := filepath.Join(s.logs, fmt.Sprintf("%02d-%s.log", s.commands, strings.Join(args[:1], "-")))
	logFile, err := os.Create(logPath)
	if err != nil {
		return measured{}, err
	}
	defer logFile.Close()
	_ = os.Remove(s.rusage)
	cmd := exec.Command(s.pulumi, full...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = s.dir, s.env, logFile, logFile
	m := measured{load: loadAverage()}
	start := time.Now()
	err = cmd.Run()
	m.wall = time.Since(start)
	if err != nil {
		return m, fmt.Errorf("pulumi %s failed (%w); its output: %s", strings.Join(args, " "), err, logPath)
	}
	m.cpu, m.rssMiB, m.procs, err = readRusage(s.rusage)
	s.peaks.add(commandKind(args, s.ups), m.rssMiB)
	if args[0] == "up" {
		s.ups++
	}
	return m, err
}

// stateWrites runs one no-op preview, untimed, with the CLI's own log at verbosity 9 and
// counts the whole-state writes it decided: in a preview too, the CLI serializes the whole
// state after every step (pulumi pkg/v3 v3.274.1 backend/diy/backend.go: a DiscardPersister
// for a dry run, still fed by backend/snapshot.go saveSnapshot), except after a same step
// whose resource equals its state (snapshot.go sameSnapshotMutation.mustWrite, which logs
// "mustWrite() true because of <field>" at -v=9 when it does not). That cost grows with
// the square of the stack (issue 14). Its log stays beside the others, but only the
// display and the counted records of it (keepPreviewLog): the rest prints resources' values.
func (s *stack) stateWrites() (int, error) {
	s.commands++
	logPath := filepath.Join(s.logs, fmt.Sprintf("%02d-preview-v9.log", s.commands))
	logFile, err := os.Create(logPath)
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	// the output goes through the filter only, never whole to disk
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer pr.Close()
	cmd := exec.Command(s.pulumi, "--non-interactive", "preview", "--expect-no-changes", "--stack", "bench", "-v=9", "--logtostderr")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = s.dir, s.env, pw, pw
	err = cmd.Start()
	pw.Close() // the CLI holds its own copy: the reader ends when the CLI does
	if err != nil {
		return 0, err
	}
	writes, err := keepPreviewLog(pr, logFile)
	if err != nil {
		_, _ = io.Copy(io.Discard, pr) // let the CLI finish writing
	}
	runErr := cmd.Wait()
	_ = os.Remove(s.rusage) // not a measured command
	if runErr != nil {
		return 0, fmt.Errorf("pulumi preview -v=9 failed (%w); its output (the display and the state writes it decided): %s", runErr, logPath)
	}
	return writes, err
}

// readRusage sums what the wrapper recorded for each provider process of one command.
func readRusage(path string) (cpu time.Duration, rssMiB float64, procs int, err error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return 0, 0, 0, nil // the command started no provider
	}
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var u providerUsage
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil {
			return 0, 0, 0, fmt.Errorf("%s: %w", path, err)
		}
		procs++
		cpu += u.CPU
		rssMiB = max(rssMiB, float64(u.MaxRSSKiB)/1024)
	}
	return cpu, rssMiB, procs, sc.Err()
}

// loadAverage is the 1-minute load average (0 when unknown).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscan(string(b), &l)
	return l
}
