package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// The benchmark measures the provider's own CPU time and memory: each stack's PULUMI_HOME
// has this program installed as the provider's plugin (stack.go), and run as that it starts the real
// provider (envRealProvider) as its child, passes its standard streams through, and when
// it exits appends the child's resource usage to envRusage.
const (
	providerBinary  = "pulumi-resource-proxmoxtalos"
	envRealProvider = "PROXMOXTALOS_BENCH_PROVIDER"
	envRusage       = "PROXMOXTALOS_BENCH_RUSAGE"
)

// providerUsage is one provider process's resource usage.
type providerUsage struct {
	CPU       time.Duration `json:"cpu"`
	MaxRSSKiB int64         `json:"maxRssKiB"`
	Wall      time.Duration `json:"wall"`
}

// wrapProvider runs the real provider and returns its exit code.
func wrapProvider() int {
	real := os.Getenv(envRealProvider)
	if real == "" {
		fmt.Fprintf(os.Stderr, "%s: run by the benchmark without %s\n", providerBinary, envRealProvider)
		return 2
	}
	cmd := exec.Command(real, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The engine interrupts the whole process group when it is done with the provider
	// (pulumi sdk resource/plugin: InterruptChildren): the child gets it too, so it is
	// only noted here (a handler, not an ignore: an ignored signal would stay ignored in
	// the child).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", providerBinary, err)
		return 2
	}
	_ = cmd.Wait()
	st := cmd.ProcessState
	u := providerUsage{CPU: st.UserTime() + st.SystemTime(), Wall: time.Since(start)}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		u.MaxRSSKiB = ru.Maxrss // kilobytes on Linux
	}
	if path := os.Getenv(envRusage); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			b, _ := json.Marshal(u)
			_, _ = f.Write(append(b, '\n'))
			f.Close()
		}
	}
	if code := st.ExitCode(); code >= 0 {
		return code
	}
	return 0 // ended by the engine's interrupt
}
