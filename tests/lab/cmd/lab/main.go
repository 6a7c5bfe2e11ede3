// Command lab runs the lab's Proxmox VE API on loopback until SIGINT or
// SIGTERM, prints how to reach it and writes a JSON state file for scripts:
//
//	go run ./tests/lab/cmd/lab -state /tmp/lab.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// State is what the state file holds.
type State struct {
	Endpoint     string   `json:"endpoint"` // https://127.0.0.1:<port> (the provider's endpoint)
	APIURL       string   `json:"apiUrl"`   // Endpoint + "/api2/json" (for raw API calls)
	APIToken     string   `json:"apiToken"` // USER@REALM!TOKENID=SECRET
	CACertFile   string   `json:"caCertFile"`
	CACertPEM    string   `json:"caCert"` // PEM`
	Nodes        []string `json:"nodes"`
	AddressBlock string   `json:"addressBlock"`
	FactoryURL   string   `json:"factoryUrl"` // the lab's Image Factory (http://127.0.0.1:<port>)
	// Tokens are the tokens -pveum commands minted: full token id ->
	// USER@REALM!NAME=SECRET.
	Tokens map[string]string `json:"tokens,omitempty"`
	PID    int               `json:"pid"`
}

// config is what the flags set.
type config struct {
	port      int
	nodes     string
	memory    int64
	cores     int
	bridges   string
	scale     float64
	seed      int64
	faults    pve.Faults
	stateFile string
	caFile    string
	quiet     bool
	noTalos   bool
	pveum     []string // pveum command lines run at start, in order
	pveumFile string   // a file of them, one a line
	statsFile string   // where to write what the API served, on exit
}

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, "; ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// parseFlags reads the command line.
func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	fs.IntVar(&c.port, "port", 0, "TCP port on 127.0.0.1 (0: any free port)")
	fs.StringVar(&c.nodes, "nodes", "pve1,pve2,pve3", "comma-separated node names")
	fs.Int64Var(&c.memory, "memory", 65536, "memory of each node in MiB")
	fs.IntVar(&c.cores, "cores", 16, "CPU cores of each node")
	fs.StringVar(&c.bridges, "bridges", "vmbr0", "comma-separated bridges present on every node")
	fs.Float64Var(&c.scale, "time-scale", 1, "duration multiplier: 0 as fast as possible, 1 realistic")
	fs.Int64Var(&c.seed, "seed", 0, "seed for MACs, UUIDs, faults and the address block (0: random)")
	fs.Float64Var(&c.faults.LockTimeoutRate, "fault-lock-timeout", 0, "fraction of config-lock acquisitions that fail with 'got timeout'")
	fs.Float64Var(&c.faults.TaskFailureRate, "fault-task", 0, "fraction of tasks that fail")
	fs.Float64Var(&c.faults.ServerErrorRate, "fault-500", 0, "fraction of API calls answered with HTTP 500")
	fs.DurationVar(&c.faults.AgentDelay, "fault-agent-delay", 0, "time after boot before the guest agent answers")
	fs.Float64Var(&c.faults.NodeRestartRate, "fault-node-restart", 0, "fraction of tasks whose node loses power mid-task (the worker dies, running VMs stop)")
	fs.DurationVar(&c.faults.NodeDowntime, "fault-node-downtime", 2*time.Second, "how long a restarted node stays unreachable")
	fs.Func("fault-script", "deterministic faults, rules separated by ';' (repeatable), for example "+
		"'call=POST /nodes/{node}/qemu/{vmid}/status/start,nth=1; task=qmclone,nth=2; power-off=pve2,after=30s,for=1m' "+
		"(see tests/lab/README.md)", func(v string) error {
		rules, err := pve.ParseFaultScript(v)
		c.faults.Script = append(c.faults.Script, rules...)
		return err
	})
	fs.StringVar(&c.stateFile, "state", "", "write the lab's state (endpoint, token, CA) as JSON to this file")
	fs.StringVar(&c.stateFile, "info-file", "", "same as -state")
	fs.StringVar(&c.statsFile, "stats", "", "on exit, write what the Proxmox API served as JSON to this file: requests by kind and by VM, "+
		"each task's status polls (also served live at GET /lab/stats, see tests/lab/README.md)")
	fs.StringVar(&c.caFile, "ca-file", "", "write the CA certificate here (default: next to the state file, or a temp file)")
	fs.BoolVar(&c.quiet, "quiet", false, "do not log API tasks")
	fs.BoolVar(&c.noTalos, "no-talos", false, "boot nothing in VMs (no simulated Talos nodes)")
	fs.Var((*multiFlag)(&c.pveum), "pveum", "a pveum command run at start, as on a node: users, tokens, roles, ACLs (repeatable; see tests/lab/README.md)")
	fs.StringVar(&c.pveumFile, "pveum-file", "", "a file of pveum command lines (other lines and # comments ignored: a documented recipe works as it is), run at start after -pveum")
	return c, fs.Parse(args)
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		os.Exit(2) // the flag package printed the error and the usage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, c config, stdout io.Writer) error {
	var specs []pve.NodeSpec
	for _, name := range splitComma(c.nodes) {
		n := pve.DefaultNode(name)
		n.MemoryMiB, n.Cores, n.Bridges = c.memory, c.cores, splitComma(c.bridges)
		specs = append(specs, n)
	}
	logger := log.New(os.Stderr, "lab: ", log.LstdFlags)
	logf := logger.Printf
	if c.quiet {
		logf = nil
	}
	l, err := lab.Start(ctx, lab.Options{
		Listen: fmt.Sprintf("127.0.0.1:%d", c.port), Nodes: specs, TimeScale: c.scale, Seed: c.seed, Faults: c.faults, Logf: logf, NoTalos: c.noTalos,
	})
	if err != nil {
		return err
	}
	defer l.Close()
	tokens, err := runPveum(l.PVE, c.pveum, c.pveumFile)
	if err != nil {
		return err
	}

	caFile, stateFile := c.caFile, c.stateFile
	if caFile == "" {
		if stateFile != "" {
			caFile = strings.TrimSuffix(stateFile, filepath.Ext(stateFile)) + "-ca.pem"
		} else {
			f, err := os.CreateTemp("", "proxmoxtalos-lab-ca-*.pem")
			if err != nil {
				return err
			}
			caFile = f.Name()
			f.Close()
		}
	}
	if err := os.WriteFile(caFile, l.CACertPEM(), 0o644); err != nil {
		return fmt.Errorf("write CA file: %w", err)
	}
	st := State{
		Endpoint: l.Endpoint(), APIURL: l.PVE.APIURL(), APIToken: l.APIToken(), CACertFile: caFile, CACertPEM: string(l.CACertPEM()),
		Nodes: l.Nodes(), AddressBlock: l.AddressBlock().String(), FactoryURL: l.FactoryURL(), Tokens: tokens, PID: os.Getpid(),
	}
	if stateFile != "" {
		b, _ := json.MarshalIndent(st, "", "  ")
		// The file holds the API token: readable by the owner only.
		if err := os.WriteFile(stateFile, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("write state file: %w", err)
		}
		defer os.Remove(stateFile)
	}
	fmt.Fprintf(stdout, "endpoint:      %s\n", st.Endpoint)
	fmt.Fprintf(stdout, "api token:     %s\n", st.APIToken)
	fmt.Fprintf(stdout, "ca file:       %s\n", st.CACertFile)
	fmt.Fprintf(stdout, "nodes:         %s\n", strings.Join(st.Nodes, ", "))
	fmt.Fprintf(stdout, "address block: %s\n", st.AddressBlock)
	fmt.Fprintf(stdout, "image factory: %s\n", st.FactoryURL)
	for _, id := range slices.Sorted(maps.Keys(tokens)) {
		fmt.Fprintf(stdout, "token:         %s\n", tokens[id])
	}
	if stateFile != "" {
		fmt.Fprintf(stdout, "state file:    %s\n", stateFile)
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping")
	if c.statsFile != "" {
		b, err := json.MarshalIndent(l.PVE.Stats(), "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.statsFile, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write stats file: %w", err)
		}
	}
	return nil
}

// runPveum runs the -pveum commands, then those of the file, and returns
// the tokens they minted by full token id.
func runPveum(srv *pve.Server, lines []string, file string) (map[string]string, error) {
	script := ""
	for _, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "pveum ") {
			l = "pveum " + l
		}
		script += l + "\n"
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("-pveum-file: %w", err)
		}
		script += string(b)
	}
	tokens, err := srv.PveumScript(script)
	if err != nil {
		return nil, fmt.Errorf("-pveum: %w", err)
	}
	return tokens, nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
