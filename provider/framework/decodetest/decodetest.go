// Package decodetest holds framework.DecodePlain to infer's decoding for a
// type: values of the type filled at random, encoded as Pulumi property
// maps, some of their values made secret, null, empty or unknown, then
// decoded both ways. A test helper, imported by tests only.
package decodetest

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// CheckNoDefaults holds framework.DecodeInputs to infer.DefaultCheck for T:
// random values as Check makes them, decoded both ways, must be equal (a
// default infer would apply to a field left unset shows as a difference).
func CheckNoDefaults[T any](t *testing.T, rounds int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(41, uint64(rounds)))
	for round := range rounds {
		var v T
		fill(rng, reflect.ValueOf(&v).Elem(), 0, true)
		m := resource.FromResourcePropertyValue(resource.NewObjectProperty(resource.NewPropertyMap(v))).AsMap()
		got, gotFails, gotErr := framework.DecodeInputs[T](context.Background(), m)
		want, wantFails, wantErr := infer.DefaultCheck[T](context.Background(), m)
		if (gotErr == nil) != (wantErr == nil) || len(gotFails) != len(wantFails) || !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: %v\nDecodeInputs: %#v %v %v\nDefaultCheck: %#v %v %v", round, m, got, gotFails, gotErr, want, wantFails, wantErr)
		}
	}
}

// Check decodes rounds random values of T and fails when
// DecodePlain decodes one differently from infer, decodes one infer
// refuses, or leaves to infer a value that infer decodes (then the fast
// path would be missed), or decodes fewer than a quarter
// (the test would prove little).
func Check[T any](t *testing.T, rounds int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(14, uint64(rounds)))
	plain, declined := 0, 0
	for round := range rounds {
		m := randomInputs[T](rng, round%2 == 1, math.MaxInt)
		got, ok := framework.DecodePlain[T](m)
		if !ok {
			if inferDecodes[T](m) {
				declined++
				if declined < 4 {
					t.Logf("declined: %v", m)
				}
			}
			continue
		}
		plain++
		want, ok := inferDecode[T](m)
		if !ok {
			t.Fatalf("round %d: DecodePlain decoded what infer refuses: %v", round, m)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: %v\nDecodePlain: %#v\ninfer:       %#v", round, m, got, want)
		}
	}
	t.Logf("%d of %d decoded plainly", plain, rounds)
	if declined > 0 || plain < rounds/4 {
		t.Fatalf("DecodePlain decoded %d of %d values and left %d plain ones to infer; want at least a quarter, "+
			"and none of the plain ones left", plain, rounds, declined)
	}
}

// fill sets v's exported fields at random: pointers nil or set, lists and
// maps empty or not, nil or not, unless required (a field without
// `optional`, which the encoder refuses nil).
func fill(rng *rand.Rand, v reflect.Value, depth int, required bool) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if required || rng.IntN(3) > 0 {
			e := reflect.New(v.Type().Elem())
			fill(rng, e.Elem(), depth+1, required)
			v.Set(e)
		}
	case reflect.String:
		v.SetString([]string{"", "a", "vmbr0", "local-lvm:10", "x y"}[rng.IntN(5)])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.IntN(200)))
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(rng.IntN(200)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(rng.IntN(800)) / 4)
	case reflect.Slice:
		if !required && rng.IntN(4) == 0 {
			return
		}
		n := rng.IntN(3)
		if required {
			n++
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(rng, s.Index(i), depth+1, true)
		}
		v.Set(s)
	case reflect.Map:
		if !required && rng.IntN(4) == 0 || v.Type().Key().Kind() != reflect.String {
			return
		}
		m := reflect.MakeMap(v.Type())
		for i := range rng.IntN(3) + 1 {
			e := reflect.New(v.Type().Elem()).Elem()
			fill(rng, e, depth+1, true)
			m.SetMapIndex(reflect.ValueOf(string(rune('a'+i))).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() || f.Anonymous {
				if fv := v.Field(i); fv.CanSet() || f.Anonymous {
					fill(rng, fv, depth+1, f.Anonymous || !strings.Contains(f.Tag.Get("pulumi"), ",optional"))
				}
			}
		}
	}
}

// randomInputs is a random value of T as a Pulumi property map; perturbed,
// some of its values down to maxDepth are made secret, null, empty or
// unknown, and unknown keys added. CheckEncode stops at depth 3: infer marks
// a secret or unknown deeper than that at a path another value below the
// same parent may overwrite (ende.walk appends each step to its parent's
// path slice, which from 3 steps on has room for one more, so siblings
// share it), and so not always where it was.
func randomInputs[T any](rng *rand.Rand, perturbed bool, maxDepth int) property.Map {
	var v T
	fill(rng, reflect.ValueOf(&v).Elem(), 0, true)
	m := resource.FromResourcePropertyValue(resource.NewObjectProperty(resource.NewPropertyMap(v))).AsMap()
	if !perturbed {
		return m
	}
	top := map[string]property.Value{}
	for k, e := range m.All {
		top[k] = perturbTo(rng, e, 1, maxDepth)
	}
	return property.NewMap(top)
}

// perturbTo makes some values of v, down to maxDepth (v's own depth is
// depth), secret, null, empty or unknown, and adds an unknown key now and
// then.
func perturbTo(rng *rand.Rand, v property.Value, depth, maxDepth int) property.Value {
	if depth > maxDepth {
		return v
	}
	out := v
	switch {
	case v.IsMap():
		m := map[string]property.Value{}
		for k, e := range v.AsMap().All {
			m[k] = perturbTo(rng, e, depth+1, maxDepth)
		}
		if rng.IntN(40) == 0 {
			m["noSuchField"] = property.New("x")
		}
		out = property.New(m)
	case v.IsArray():
		var arr []property.Value
		for _, e := range v.AsArray().All {
			arr = append(arr, perturbTo(rng, e, depth+1, maxDepth))
		}
		switch rng.IntN(20) {
		case 0:
			arr = []property.Value{}
		case 1:
			arr = append(arr, property.New(property.Null))
		}
		out = property.New(arr)
	}
	switch rng.IntN(30) {
	case 0, 1, 2:
		out = out.WithSecret(true)
	case 3:
		out = property.New(property.Null)
	case 4:
		out = property.New(property.Computed)
	}
	return out
}

// inferDecodes reports whether infer decodes m.
func inferDecodes[T any](m property.Map) bool {
	_, ok := inferDecode[T](m)
	return ok
}

// inferDecode is m decoded by infer as a Diff decodes its state
// (infer/internal/ende Decode, nothing else: no defaults), taken from the
// Diff of a resource whose state type is T; false when infer refuses it
// (its mapper panics on a null in a list).
func inferDecode[T any](m property.Map) (out T, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	c := &capture[T]{}
	_, err := infer.Resource[*capture[T], T, T](c).Diff(context.Background(), p.DiffRequest{State: m, Inputs: m})
	return c.state, err == nil && c.called
}

// capture is a resource whose Diff keeps the state infer decoded for it.
type capture[T any] struct {
	state  T
	called bool
}

func (*capture[T]) Annotate(a infer.Annotator) { a.SetToken("index", "Capture") }

func (*capture[T]) Create(context.Context, infer.CreateRequest[T]) (infer.CreateResponse[T], error) {
	return infer.CreateResponse[T]{}, nil
}

func (c *capture[T]) Diff(_ context.Context, req infer.DiffRequest[T, T]) (infer.DiffResponse, error) {
	c.state, c.called = req.State, true
	return infer.DiffResponse{}, nil
}

// CheckEncode holds framework.EncodeChecked to infer's Check for T: random
// values of T, encoded as Pulumi property maps, some of their values made
// secret, null, empty or unknown, are the inputs of a Check that returns
// either what they decode to or another random value of T (a Check that
// changes its inputs); infer's Check of a resource doing that and
// EncodeChecked must give the same checked inputs. It fails when fewer than
// a quarter are taken by EncodeChecked (the test would prove little).
func CheckEncode[T any](t *testing.T, rounds int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, uint64(rounds)))
	urn := resource.NewURN("stack", "project", "", "index:Checker", "c")
	taken := 0
	for round := range rounds {
		m := randomInputs[T](rng, round%2 == 1, 3)
		checked, ok := framework.DecodePlain[T](m)
		if !ok {
			continue
		}
		if round%3 == 2 {
			checked = *new(T)
			fill(rng, reflect.ValueOf(&checked).Elem(), 0, true)
		}
		got, ok := framework.EncodeChecked(checked, m)
		if !ok {
			continue
		}
		taken++
		want, err := infer.Resource[*checker[T], T, T](&checker[T]{out: checked}).Check(context.Background(), p.CheckRequest{Urn: urn, Inputs: m})
		if err != nil {
			t.Fatalf("round %d: infer's Check: %v", round, err)
		}
		if !got.Equals(want.Inputs) {
			t.Fatalf("round %d: inputs %v, checked %#v\nEncodeChecked: %v\ninfer:         %v", round, m, checked, got, want.Inputs)
		}
	}
	t.Logf("%d of %d encoded", taken, rounds)
	if taken < rounds/4 {
		t.Fatalf("EncodeChecked took %d of %d inputs; want at least a quarter", taken, rounds)
	}
}

// checker is a resource whose Check returns out, whatever its inputs.
type checker[T any] struct{ out T }

func (*checker[T]) Annotate(a infer.Annotator) { a.SetToken("index", "Checker") }

func (*checker[T]) Create(context.Context, infer.CreateRequest[T]) (infer.CreateResponse[T], error) {
	return infer.CreateResponse[T]{}, nil
}

func (c *checker[T]) Check(context.Context, infer.CheckRequest) (infer.CheckResponse[T], error) {
	return infer.CheckResponse[T]{Inputs: c.out}, nil
}
