// Package version holds the provider version, set at build time by the Makefile
// from the VERSION file so that the binary, the schema and every SDK agree.
package version

// Version is overwritten with -ldflags "-X .../provider/version.Version=...".
var Version = "0.0.0-dev"
