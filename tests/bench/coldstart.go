package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// coldStart measures the provider from process start to its GetSchema answer, as the
// engine first talks to it: started without an engine address (attach mode), its port
// read from its first line of output. CPU and memory are the process's own.
func coldStart(provider string) (measured, error) {
	m := measured{load: loadAverage()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, provider)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return m, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return m, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	port, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return m, fmt.Errorf("provider %s printed no port: %w", provider, err)
	}
	conn, err := grpc.NewClient("127.0.0.1:"+strings.TrimSpace(port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return m, err
	}
	defer conn.Close()
	resp, err := pulumirpc.NewResourceProviderClient(conn).GetSchema(ctx, &pulumirpc.GetSchemaRequest{Version: 0})
	if err != nil {
		return m, fmt.Errorf("GetSchema: %w", err)
	}
	m.wall = time.Since(start)
	if !strings.Contains(resp.GetSchema(), `"name":"proxmoxtalos"`) && !strings.Contains(resp.GetSchema(), `"name": "proxmoxtalos"`) {
		return m, fmt.Errorf("GetSchema answered no proxmoxtalos schema")
	}
	// the process's usage so far, before it is killed
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	if st := cmd.ProcessState; st != nil {
		m.cpu = st.UserTime() + st.SystemTime()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			m.rssMiB = float64(ru.Maxrss) / 1024
		}
	}
	return m, nil
}
