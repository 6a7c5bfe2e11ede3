// Package harness runs the real Pulumi CLI against the proxmoxtalos provider for end-to-end
// tests, the way a user runs it, in a hermetic environment:
//
//   - the provider binary is built once per test process (or taken from
//     PROXMOXTALOS_PROVIDER_BIN, which `make test` sets to the binary it just built);
//   - the Pulumi CLI and YAML language host come from .tools/bin (`make tools`);
//   - PULUMI_HOME, a file backend and the passphrase live in the test's temp dir, plugin
//     acquisition and ambient plugins are off, and the project finds the provider through
//     plugins.providers[].path, so nothing from the machine leaks in or out.
//
// A YAMLProject runs `pulumi up/preview/refresh/destroy/import/stack export` in a Pulumi
// YAML project folder; InlineStack gives a Go Automation API stack for inline programs.
// Both take the lab's endpoint, token and CA as plain values (Lab) so tests can start the
// lab however they like (in-process with tests/lab).
//
// Set PROXMOXTALOS_E2E=0 to skip e2e tests on a machine without the tools; otherwise a
// missing CLI fails the test, it never silently passes.
package harness
