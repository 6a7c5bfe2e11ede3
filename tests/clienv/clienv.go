// Package clienv is the environment the programs under tests/ (the demo, the benchmark) run
// the Pulumi CLI in: the repository's own tools first on PATH, a Pulumi home and file
// backend of their own, no plugin downloads, no ambient plugins, no update check, and none
// of the caller's PULUMI_* or PROXMOX_VE_* settings.
package clienv

import (
	"os"
	"path/filepath"
	"strings"
)

// Hermetic is the current environment without PULUMI_*, PROXMOX_VE_* and PATH, plus PATH
// with tools first and the Pulumi settings for home, a file backend at backend and the
// passphrase.
func Hermetic(tools, home, backend, passphrase string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "PULUMI_") && !strings.HasPrefix(k, "PROXMOX_VE_") && k != "PATH" {
			env = append(env, kv)
		}
	}
	return append(env,
		"PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PULUMI_HOME="+home,
		"PULUMI_BACKEND_URL=file://"+filepath.ToSlash(backend),
		"PULUMI_CONFIG_PASSPHRASE="+passphrase,
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true",
		"PULUMI_IGNORE_AMBIENT_PLUGINS=true",
		"PULUMI_SKIP_UPDATE_CHECK=true",
		"PULUMI_DIY_BACKEND_NO_LEGACY_WARNING=true",
	)
}
