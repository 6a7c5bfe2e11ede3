package talosconfig

import (
	"testing"
	"time"
)

func BenchmarkNewSecrets(b *testing.B) {
	for b.Loop() {
		if _, err := NewSecrets("v1.12.5", time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	in := baseInput(b, "v1.12.5", RoleControlPlane, "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n")
	for b.Loop() {
		if _, err := Generate(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRedactAndClassify(b *testing.B) {
	old := mustGenerate(b, baseInput(b, "v1.12.5", RoleControlPlane))
	next := mustGenerate(b, baseInput(b, "v1.12.5", RoleControlPlane, "machine:\n  nodeLabels:\n    a: b\n"))
	for b.Loop() {
		if _, err := Redact(next); err != nil {
			b.Fatal(err)
		}
		if _, err := ClassifyChange(old, next); err != nil {
			b.Fatal(err)
		}
	}
}
