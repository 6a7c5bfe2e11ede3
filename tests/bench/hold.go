package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// holdStack writes env.sh beside the stack's project (its hermetic Pulumi environment, the
// lab's endpoint and token) and waits for SIGINT or SIGTERM. Meanwhile `. env.sh` in a shell
// lets one run `pulumi preview` on the stack by hand, with another provider binary through
// PROXMOXTALOS_BENCH_PROVIDER: how a change is compared with the build before it on the same
// state, or a state written by an older provider previewed by a newer one (the program is
// type-checked against the schema the stack's first provider gave: the CLI caches it per
// plugin version, stack.go; a binary with another schema needs a new stack). A developer's
// tool: the token is the lab's own, valid while this process runs. Started under
// `flock /work/e2e.lock` (even in the background), it keeps the lock as long as it holds,
// since it inherits the lock's descriptor: hold, preview and interrupt it in one locked script.
func (b *bench) holdStack(s *stack) error {
	var sh strings.Builder
	for _, kv := range s.env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&sh, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	fmt.Fprintf(&sh, "cd '%s'\nalias pulumi='%s'\n", s.dir, s.pulumi)
	path := filepath.Join(filepath.Dir(s.dir), "env.sh")
	if err := os.WriteFile(path, []byte(sh.String()), 0o600); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	b.progress("holding the stack: . %s; pulumi preview --stack bench. Interrupt (kill -INT %d) to destroy it and go on", path, os.Getpid())
	<-sigs
	return nil
}
