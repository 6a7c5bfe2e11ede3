// Package early sets the provider's garbage collector target and GOMAXPROCS (unless the
// environment sets them: runtimetune.Tune) in its package initializer, which the Go
// runtime runs before most of the program's: the provider's dependencies allocate about
// 10 MB in theirs (the Pulumi schema package compiles its JSON metaschema, the Talos
// machinery registers its types), and with Go's defaults a provider process spent about
// 15 ms of its 40 ms start-up collecting that garbage (issue 14; the engine starts two
// provider processes per preview of a YAML program, and one for every other command).
// Packages are initialized in import-path order as soon as what they import is: this one
// imports only runtimetune, which imports only the standard library, so it runs before the
// dependencies sorted after github.com/proxmoxtalos (pulumi, siderolabs,
// google.golang.org, k8s.io, ...). The provider's main imports it for that effect alone.
package early

import "github.com/proxmoxtalos/proxmoxtalos/provider/runtimetune"

func init() { runtimetune.Tune() }
