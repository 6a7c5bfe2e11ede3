package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// keep lists, per language folder, entries that are not generated and must survive a
// regeneration: build outputs and installed dependencies (all git-ignored) and the npm
// lockfile, which `npm install` maintains and the repository commits.
var keep = map[string]map[string]bool{
	"go":     {},
	"nodejs": {"node_modules": true, "bin": true, "package-lock.json": true},
	"python": {"build": true, "dist": true, ".venv": true, "pulumi_proxmoxtalos.egg-info": true},
}

// write replaces sdk/<lang> with files (paths relative to root), so that a resource removed
// from the schema disappears from the SDK too.
func write(root, lang string, files map[string][]byte) error {
	dir := filepath.Join(root, lang)
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("reading %s: %w", dir, err)
	}
	for _, e := range entries {
		if keep[lang][e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("removing the old %s: %w", filepath.Join(dir, e.Name()), err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		target := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(target), err)
		}
		if err := os.WriteFile(target, files[p], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", target, err)
		}
	}
	return nil
}
