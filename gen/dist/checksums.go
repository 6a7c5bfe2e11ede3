package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// artifacts lists every file under dir (slash-separated, relative), except the checksums
// file itself and Maven's own .md5/.sha1 sidecars.
func artifacts(dir, version string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == checksumsName(version) || strings.HasSuffix(rel, ".md5") || strings.HasSuffix(rel, ".sha1") {
			return nil
		}
		out = append(out, rel)
		return nil
	})
	sort.Strings(out)
	return out, err
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeChecksums writes <name>_<version>_checksums.txt in sha256sum's format, so that
// `sha256sum -c` checks a download.
func writeChecksums(dir, version string) error {
	files, err := artifacts(dir, version)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, rel := range files {
		sum, err := sha256File(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, rel)
	}
	return os.WriteFile(filepath.Join(dir, checksumsName(version)), []byte(b.String()), 0o644)
}

// readChecksums parses a sha256sum-format file into file -> hash.
func readChecksums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("%s: line %q is not '<sha256>  <file>'", filepath.Base(path), sc.Text())
		}
		sums[name] = sum
	}
	return sums, sc.Err()
}
