package talos

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process the lab runs (etcd, kube-apiserver). Its output
// is kept (the last part) to explain a failure; it dies with the lab's
// process (Pdeathsig), so a killed test leaves nothing behind.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	err  error // set when done is closed
}

func startProc(name, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, out: &tailBuffer{max: 64 << 10}, done: make(chan struct{})}

	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	kept := keptOutput(name)
	if kept != nil {
		out := io.MultiWriter(p.out, kept)
		p.cmd.Stdout, p.cmd.Stderr = out, out
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}

	if err := startOnLockedThread(p.cmd); err != nil {
		if kept != nil {
			kept.Close() //nolint:errcheck // a debugging aid
		}

		return nil, fmt.Errorf("starting %s: %w", name, err)
	}

	go func() {
		p.err = p.cmd.Wait()
		if kept != nil {
			kept.Close() //nolint:errcheck // a debugging aid
		}
		close(p.done)
	}()

	return p, nil
}

// ProcLogsEnv names a directory where every child process's whole output
// is kept, one file per start (etcd's warnings explain its timing; the
// tail kept in memory only explains a failure).
const ProcLogsEnv = "PROXMOXTALOS_LAB_PROC_LOGS"

// keptOutput is the file a child's output is also written to, or nil.
func keptOutput(name string) *os.File {
	dir := os.Getenv(ProcLogsEnv)
	if dir == "" {
		return nil
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil // a debugging aid: the lab runs on without it
	}

	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", strings.ReplaceAll(name, " ", "-"), time.Now().UnixNano())))
	if err != nil {
		return nil
	}

	return f
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process: SIGTERM (a clean shutdown), SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}

	p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck

	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// kill ends the process at once (power loss).
func (p *proc) kill() {
	if p == nil || p.exited() {
		return
	}

	p.cmd.Process.Kill() //nolint:errcheck
	<-p.done
}

// lastLines is the end of the process's output, for an error message.
func (p *proc) lastLines(n int) string {
	lines := strings.Split(strings.TrimSpace(p.out.String()), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}

	return strings.Join(lines, "\n")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()

	t.buf.Write(b)

	if over := t.buf.Len() - t.max; over > 0 {
		rest := append([]byte(nil), t.buf.Bytes()[over:]...)
		t.buf.Reset()
		t.buf.Write(rest)
	}

	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()

	return t.buf.String()
}

// Pdeathsig is sent when the *thread* that started the child exits
// (prctl(2) PR_SET_PDEATHSIG, golang/go#27505), not when the process does.
// Go ends a thread when a goroutine locked to it exits, so a child started
// on such a thread would be killed at a random moment. Every child is
// therefore started from one thread that stays locked for the life of the
// process: the children die with the process, and only then.
var (
	starterOnce sync.Once
	starts      = make(chan startJob)
)

type startJob struct {
	cmd *exec.Cmd
	err chan error
}

func startOnLockedThread(cmd *exec.Cmd) error {
	starterOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked, and the goroutine never returns

			for j := range starts {
				j.err <- j.cmd.Start()
			}
		}()
	})

	j := startJob{cmd: cmd, err: make(chan error, 1)}
	starts <- j

	return <-j.err
}
