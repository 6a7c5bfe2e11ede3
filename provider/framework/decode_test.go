package framework_test

import (
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework/decodetest"
)

type plainEnum string

type plainInner struct {
	Name  string            `pulumi:"name"`
	Count *int              `pulumi:"count,optional"`
	Tags  []string          `pulumi:"tags,optional"`
	Sizes map[string]int    `pulumi:"sizes,optional"`
	Kind  *plainEnum        `pulumi:"kind,optional"`
	Rate  float64           `pulumi:"rate,optional"`
	Extra map[string]string `pulumi:"extra,optional"`
}

type plainArgs struct {
	Node     string                `pulumi:"node"`
	Inner    *plainInner           `pulumi:"inner,optional"`
	Items    []plainInner          `pulumi:"items,optional"`
	Pointers []*plainInner         `pulumi:"pointers,optional"`
	ByName   map[string]plainInner `pulumi:"byName,optional"`
	IDs      map[string]int        `pulumi:"ids,optional"`
	Flag     *bool                 `pulumi:"flag,optional"`
	Mode     plainEnum             `pulumi:"mode,optional"`
	Ptrs     []*string             `pulumi:"ptrs,optional"`
	Matrix   [][]int               `pulumi:"matrix,optional"`
	ID       *int                  `pulumi:"id,optional"`
}

// plainState embeds its args in an unexported type, as the resources'
// states do, and shadows one of them (VirtualMachineState's vmId).
type plainState struct {
	plainArgs
	ID     int    `pulumi:"id"`
	Status string `pulumi:"status,optional"`
}

// DecodePlain decodes as infer does (DefaultCheck, for types without
// defaults), including secrets, nulls, empty lists and maps, embedded
// structs, enums and numbers, and leaves unknowns, nulls in lists, unknown
// keys and missing required fields to infer.
func TestDecodePlainMatchesInfer(t *testing.T) {
	t.Parallel()
	decodetest.Check[plainArgs](t, 2000)
	decodetest.Check[plainState](t, 2000)
}

// EncodeChecked encodes a Check's result as infer does, including
// secrets, unknowns, empty lists and maps, embedded and shadowed fields,
// and a result that differs from the inputs.
func TestEncodeCheckedMatchesInfer(t *testing.T) {
	t.Parallel()
	decodetest.CheckEncode[plainArgs](t, 1000)
	decodetest.CheckEncode[plainState](t, 1000)
}
