package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestEmbeddedSchemaIsCurrent regenerates the schema subset from the PVE
// schema in ../shared and compares it with the committed, embedded copy.
func TestEmbeddedSchemaIsCurrent(t *testing.T) {
	t.Parallel()
	in := "/work/shared/pve-api/apidata-9.1.3.json"
	if _, err := os.Stat(in); err != nil {
		t.Skipf("PVE API schema not available here (%v); the embedded copy cannot be compared", err)
	}
	out := filepath.Join(t.TempDir(), "schema.json")
	if err := run(in, out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile(filepath.Join("..", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("tests/lab/pveapi/schema.json is stale: run go run ./tests/lab/pveapi/gen")
	}
}

func TestUnknownEndpointFails(t *testing.T) {
	t.Parallel()
	in := "/work/shared/pve-api/apidata-9.1.3.json"
	if _, err := os.Stat(in); err != nil {
		t.Skipf("PVE API schema not available here (%v)", err)
	}
	if err := generate(in, filepath.Join(t.TempDir(), "x.json"), []string{"GET /nodes/{node}/qemu/{vmid}/nosuch"}); err == nil {
		t.Fatal("generator accepted a path that is not in the schema")
	}
}
