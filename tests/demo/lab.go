package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// labInfo is the part of the lab's -state file (tests/lab/cmd/lab) the demo needs: how to
// reach its Proxmox VE API.
type labInfo struct {
	Endpoint string `json:"endpoint"` // https://127.0.0.1:<port> (the provider's endpoint)
	APIURL   string `json:"apiUrl"`   // the API's base URL, Endpoint + /api2/json (raw calls)
	APIToken string `json:"apiToken"` // USER@REALM!TOKENID=SECRET
	CACert   string `json:"caCert"`   // PEM of the CA that signed the lab's certificate
	// AddressBlock is the 127.X.Y.0/24 the lab's simulated guests may use: a cloud-init
	// address inside it is where the Talos node simulator answers.
	AddressBlock string `json:"addressBlock"`
	// FactoryURL is the lab's Image Factory, where the cluster example registers its
	// schematic (this machine cannot reach the public one).
	FactoryURL string `json:"factoryUrl"`
}

// demoTimeScale makes the lab's tasks take a tenth of their real duration: realistic
// enough to watch, short enough to wait for.
const demoTimeScale = "0.1"

type labProcess struct {
	cmd     *exec.Cmd
	info    labInfo
	logPath string
	exited  chan struct{} // closed when the process has exited
	err     error         // its exit status, valid after exited is closed
}

// startLab builds tests/lab/cmd/lab, starts it in the background and waits for its state
// file. The binary is run directly (not through `go run`) so that stopping it stops the lab.
func startLab(root, work string) (*labProcess, error) {
	bin := filepath.Join(work, "lab")
	build := exec.Command("go", "build", "-o", bin, "./tests/lab/cmd/lab")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the lab (tests/lab/cmd/lab): %w", err)
	}
	infoPath := filepath.Join(work, "lab.json")
	logPath := filepath.Join(work, "lab.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-state", infoPath, "-time-scale", demoTimeScale)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the lab: %w", err)
	}
	lab := &labProcess{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		lab.err = cmd.Wait()
		logFile.Close()
		close(lab.exited)
	}()

	deadline := time.After(time.Minute)
	for {
		if b, err := os.ReadFile(infoPath); err == nil && json.Unmarshal(b, &lab.info) == nil && lab.info.Endpoint != "" {
			if lab.info.APIURL == "" || lab.info.APIToken == "" || lab.info.CACert == "" || lab.info.AddressBlock == "" {
				lab.stop()
				return nil, fmt.Errorf("the lab's state file %s lacks apiUrl, apiToken, caCert or addressBlock: "+
					"tests/demo/lab.go must follow tests/lab/cmd/lab's State", infoPath)
			}
			return lab, nil
		}
		select {
		case <-lab.exited:
			return nil, fmt.Errorf("the lab exited before serving (%v); see %s", lab.err, logPath)
		case <-deadline:
			lab.stop()
			return nil, fmt.Errorf("the lab wrote no %s within a minute; see %s", infoPath, logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop asks the lab to shut down and kills it if it does not within ten seconds.
func (l *labProcess) stop() {
	select {
	case <-l.exited:
		return
	default:
	}
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.exited:
	case <-time.After(10 * time.Second):
		_ = l.cmd.Process.Kill()
		<-l.exited
	}
}
