package talos

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// The real kube-apiserver and etcd for the simulated clusters are built from
// the Go modules pinned in tools/kube/go.mod into
// .tools/bin by `make kube-tools` (part of `make tools`), named with their
// versions so that a bump never runs a stale binary.

// KubeTools are the paths and versions of the binaries the lab runs.
type KubeTools struct {
	APIServer, Etcd                string // binaries
	KubernetesVersion, EtcdVersion string // "v1.35.4", "v3.6.6"
}

var (
	kubeToolsOnce sync.Once
	kubeTools     KubeTools
	kubeToolsErr  error
)

// FindKubeTools locates the lab's kube-apiserver and etcd. The directory is
// $PROXMOXTALOS_TOOLS_BIN, or .tools/bin of the repository this package was
// built from; the versions come from tools/kube/go.mod beside it.
func FindKubeTools() (KubeTools, error) {
	kubeToolsOnce.Do(func() { kubeTools, kubeToolsErr = findKubeTools() })

	return kubeTools, kubeToolsErr
}

func findKubeTools() (KubeTools, error) {
	root := repoRoot()
	if root == "" {
		return KubeTools{}, errors.New("the lab cannot find its repository (tools/kube/go.mod) to learn which kube-apiserver and etcd to run")
	}

	k8s, etcd, err := pinnedKubeVersions(filepath.Join(root, "tools", "kube", "go.mod"))
	if err != nil {
		return KubeTools{}, err
	}

	dir := os.Getenv("PROXMOXTALOS_TOOLS_BIN")
	if dir == "" {
		dir = filepath.Join(root, ".tools", "bin")
	}

	t := KubeTools{
		APIServer:         filepath.Join(dir, "kube-apiserver-"+k8s),
		Etcd:              filepath.Join(dir, "etcd-"+etcd),
		KubernetesVersion: k8s,
		EtcdVersion:       etcd,
	}

	for _, bin := range []string{t.APIServer, t.Etcd} {
		if _, err := os.Stat(bin); err != nil {
			return KubeTools{}, fmt.Errorf("the lab runs the real kube-apiserver %s and etcd %s, but %s is not built: run `make kube-tools` in %s (several minutes the first time)", k8s, etcd, bin, root)
		}
	}

	return t, nil
}

// repoRoot is the repository this source file belongs to (tests/lab/talos
// three levels down), or, when built with -trimpath (the Makefile's
// GOFLAGS: the file name is then module-relative), the nearest directory
// above the working directory that holds tools/kube/go.mod; "" when neither
// is there.
func repoRoot() string {
	has := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "tools", "kube", "go.mod"))
		return err == nil
	}

	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if root := filepath.Join(filepath.Dir(file), "..", "..", ".."); has(root) {
			return filepath.Clean(root)
		}
	}

	dir, err := os.Getwd()
	if err != nil {
		return ""
	}

	for {
		if has(dir) {
			return dir
		}

		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}

		dir = parent
	}
}

// pinnedKubeVersions reads the k8s.io/kubernetes and etcd server versions
// from the tools module's go.mod.
func pinnedKubeVersions(goMod string) (k8s, etcd string, err error) {
	f, err := os.Open(goMod)
	if err != nil {
		return "", "", err
	}
	defer f.Close() //nolint:errcheck

	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}

		switch fields[0] {
		case "k8s.io/kubernetes":
			k8s = fields[1]
		case "go.etcd.io/etcd/server/v3":
			etcd = fields[1]
		}
	}

	if k8s == "" || etcd == "" {
		return "", "", fmt.Errorf("%s pins no k8s.io/kubernetes or go.etcd.io/etcd/server/v3", goMod)
	}

	return k8s, etcd, sc.Err()
}
