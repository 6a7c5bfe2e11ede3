// Package talosconfig is the pure (no I/O) Talos side of proxmoxtalos: secrets
// bundles, admin client certificates, machine configuration generation with
// patches and validation, a redacted view of a configuration for previews,
// change classification (no reboot / reboot / upgrade), version rules, and
// Image Factory schematics and URLs.
//
// Everything goes through github.com/siderolabs/talos/pkg/machinery, the same
// library talosctl uses, so a configuration accepted here is one a Talos node
// accepts. Functions are deterministic for given inputs, except NewSecrets and
// NewAdminCertificate, which draw keys from crypto/rand.
package talosconfig
