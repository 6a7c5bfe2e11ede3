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
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// State is what the state file holds.
type State struct {
	Endpoint     string   `json:"endpoint"`
	APIToken     string   `json:"apiToken"`
	CACertFile   string   `json:"caCertFile"`
	CACertPEM    string   `json:"caCertPem"`
	Nodes        []string `json:"nodes"`
	AddressBlock string   `json:"addressBlock"`
	PID          int      `json:"pid"`
}

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0: any free port)")
	nodes := flag.String("nodes", "pve1,pve2,pve3", "comma-separated node names")
	memory := flag.Int64("memory", 65536, "memory of each node in MiB")
	cores := flag.Int("cores", 16, "CPU cores of each node")
	bridges := flag.String("bridges", "vmbr0", "comma-separated bridges present on every node")
	scale := flag.Float64("time-scale", 1, "duration multiplier: 0 as fast as possible, 1 realistic")
	seed := flag.Int64("seed", 0, "seed for MACs, UUIDs, faults and the address block (0: random)")
	lockRate := flag.Float64("fault-lock-timeout", 0, "fraction of config-lock acquisitions that fail with 'got timeout'")
	taskRate := flag.Float64("fault-task", 0, "fraction of tasks that fail")
	errRate := flag.Float64("fault-500", 0, "fraction of API calls answered with HTTP 500")
	agentDelay := flag.Duration("fault-agent-delay", 0, "time after boot before the guest agent answers")
	stateFile := flag.String("state", "", "write the lab's state (endpoint, token, CA) as JSON to this file")
	caFile := flag.String("ca-file", "", "write the CA certificate here (default: next to the state file, or a temp file)")
	quiet := flag.Bool("quiet", false, "do not log API tasks")
	flag.Parse()

	if err := run(*port, *nodes, *memory, *cores, *bridges, *scale, *seed, pve.Faults{
		LockTimeoutRate: *lockRate, TaskFailureRate: *taskRate, ServerErrorRate: *errRate, AgentDelay: *agentDelay,
	}, *stateFile, *caFile, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}

func run(port int, nodeList string, memory int64, cores int, bridgeList string, scale float64, seed int64, faults pve.Faults, stateFile, caFile string, quiet bool) error {
	var specs []pve.NodeSpec
	for _, name := range splitComma(nodeList) {
		n := pve.DefaultNode(name)
		n.MemoryMiB, n.Cores, n.Bridges = memory, cores, splitComma(bridgeList)
		specs = append(specs, n)
	}
	logger := log.New(os.Stderr, "lab: ", log.LstdFlags)
	logf := logger.Printf
	if quiet {
		logf = nil
	}
	l, err := lab.Start(context.Background(), lab.Options{
		Listen: fmt.Sprintf("127.0.0.1:%d", port), Nodes: specs, TimeScale: scale, Seed: seed, Faults: faults, Logf: logf,
	})
	if err != nil {
		return err
	}
	defer l.Close()

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
		Endpoint: l.Endpoint(), APIToken: l.APIToken(), CACertFile: caFile, CACertPEM: string(l.CACertPEM()),
		Nodes: l.Nodes(), AddressBlock: l.AddressBlock().String(), PID: os.Getpid(),
	}
	if stateFile != "" {
		b, _ := json.MarshalIndent(st, "", "  ")
		// The file holds the API token: readable by the owner only.
		if err := os.WriteFile(stateFile, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("write state file: %w", err)
		}
		defer os.Remove(stateFile)
	}
	fmt.Printf("endpoint:      %s\n", st.Endpoint)
	fmt.Printf("api token:     %s\n", st.APIToken)
	fmt.Printf("ca file:       %s\n", st.CACertFile)
	fmt.Printf("nodes:         %s\n", strings.Join(st.Nodes, ", "))
	fmt.Printf("address block: %s\n", st.AddressBlock)
	if stateFile != "" {
		fmt.Printf("state file:    %s\n", stateFile)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	fmt.Println("stopping")
	done := make(chan struct{})
	go func() { l.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	return nil
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
