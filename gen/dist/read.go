package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// tarGzEntry is one regular file of a tar.gz.
type tarGzEntry struct {
	mode int64
	data []byte
}

// readTarGz returns the regular files of a tar.gz by name.
func readTarGz(path string) (map[string]tarGzEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	tr := tar.NewReader(gz)
	out := map[string]tarGzEntry{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", filepath.Base(path), hdr.Name, err)
		}
		out[hdr.Name] = tarGzEntry{mode: hdr.Mode, data: b}
	}
}

// readZip returns the files of a zip (wheel, jar) by name.
func readZip(path string) (map[string][]byte, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	defer zr.Close()
	out := map[string][]byte{}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", filepath.Base(path), f.Name, err)
		}
		out[f.Name] = b
	}
	return out, nil
}
