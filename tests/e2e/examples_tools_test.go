package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The language runners (tests/e2e/node, tests/e2e/python) install pinned dependencies into
// ignored folders once; a stamp holding the hash of the pinning files makes later runs skip
// the install until those files change. Package downloads are cached under <repo>/.cache,
// like the Makefile's.

// installOnce runs install unless stampFile holds the hash of the given files. An flock
// in the temp directory serializes installs across test processes.
func installOnce(stampFile string, pinFiles []string, install func() error) error {
	h := sha256.New()
	for _, f := range pinFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\n%d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	want := hex.EncodeToString(h.Sum(nil))

	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "proxmoxtalos-e2e-install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck

	if got, err := os.ReadFile(stampFile); err == nil && strings.TrimSpace(string(got)) == want {
		return nil
	}
	if err := install(); err != nil {
		return err
	}
	return os.WriteFile(stampFile, []byte(want+"\n"), 0o644)
}

// processTempDir makes a temp folder for this test process's prepared toolchains, which
// outlive single tests and so cannot live in t.TempDir. Folders that earlier processes left
// behind (their PID is gone) are removed first.
func processTempDir(prefix string) (string, error) {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, dir := range old {
		var pid int
		if _, err := fmt.Sscanf(strings.TrimPrefix(filepath.Base(dir), prefix), "%d-", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", prefix, os.Getpid()))
}

// cmdTimeout bounds one tool run (npm, tsc, pip, mypy, mvn, a runner step).
const cmdTimeout = 15 * time.Minute

// run runs a command and returns its combined output; a failure includes the output.
func run(dir string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("%s %s did not finish within %s:\n%s", name, strings.Join(args, " "), cmdTimeout, out.String())
	}
	if err != nil {
		return out.String(), fmt.Errorf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out.String())
	}
	return out.String(), nil
}

// lookTool finds a language tool on PATH; without it the test fails with what to install.
func lookTool(t *testing.T, name, what string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: the %s example tests need %s", name, what, what)
	}
	return p
}

// copyTree copies the files under src into dst, skipping the named folders anywhere in
// the tree (node_modules, build output).
func copyTree(src, dst string, skip ...string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			for _, s := range skip {
				if d.Name() == s && rel != "." {
					return filepath.SkipDir
				}
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
