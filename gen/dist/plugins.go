package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	pversion "github.com/proxmoxtalos/proxmoxtalos/provider/version"
)

const modulePath = "github.com/proxmoxtalos/proxmoxtalos"

// archiveDocs go into every plugin archive beside the binary, as goreleaser's defaults do.
var archiveDocs = []string{"LICENSE", "README.md", "CHANGELOG.md"}

// buildPlugin cross-compiles the provider for p (version from VERSION) and
// writes its archive into out.
func buildPlugin(root, out, version string, p Platform) error {
	tmp, err := os.MkdirTemp("", "proxmoxtalos-dist-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, binaryName(p))
	// The Makefile's settings (-trimpath, CGO_ENABLED=0) plus -s -w, which only the linker
	// sees: make test's host archive reuses the compiled packages and only links.
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin,
		"-ldflags", "-s -w -X "+modulePath+"/provider/version.Version="+version+
			" -X "+modulePath+"/provider/version.Stamp="+pversion.StampFor(version),
		"./provider/cmd/pulumi-resource-"+pluginName)
	cmd.Dir = root
	// Static binaries (no libc dependency), as the Makefile builds everything.
	cmd.Env = append(os.Environ(), "GOOS="+p.OS, "GOARCH="+p.Arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the provider for %s: %v\n%s", p, err, b)
	}
	files := []archiveFile{{name: binaryName(p), path: bin, mode: 0o755}}
	for _, doc := range archiveDocs {
		files = append(files, archiveFile{name: doc, path: filepath.Join(root, doc), mode: 0o644})
	}
	return writeArchive(filepath.Join(out, archiveName(version, p)), files)
}

type archiveFile struct {
	name, path string
	mode       int64
}

// epoch is every entry's time, so that one source tree always gives the same archive.
var epoch = time.Unix(0, 0).UTC()

// writeArchive writes files into a tar.gz at dest, reproducibly (fixed times and owners).
func writeArchive(dest string, files []archiveFile) (err error) {
	f, err := os.Create(dest)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, file := range files {
		b, err := os.ReadFile(file.path)
		if err != nil {
			return fmt.Errorf("archive %s: %w", filepath.Base(dest), err)
		}
		hdr := &tar.Header{Name: file.name, Mode: file.mode, Size: int64(len(b)), ModTime: epoch, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
