package framework

import (
	"reflect"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// EncodeChecked is what infer (pulumi-go-provider v1.5.0) makes of the
// inputs a resource's Check returns, for inputs DecodePlain decodes:
// infer/resource.go Check encodes them with the encoder of a decoding of
// the request's inputs (ende.Encoder.Encode) and marks the type's secret
// fields (applySecrets). In property terms:
//
//   - the value as the SDK's mapper encodes it: a nil pointer, slice or map
//     field is left out, a nil element is a null, every number a float64;
//   - where the request's inputs had a secret, an unknown, or an empty list
//     (or an empty map for a map field), at the same path of the encoding
//     (ende.walk's changes): the value there is made secret or unknown
//     (keeping the secret flag), an empty list or map a missing value left
//     out stands for is put back; a path the encoding does not have is
//     skipped, unless it is an empty list or map to put back;
//   - every field tagged `provider:"secret"` that is there is secret.
//
// Why: infer decodes the inputs a second time to get that encoder (the
// resource's Check decoded them already), encodes through a JSON-like
// map and converts between Pulumi's two property models three times; in
// a no-op preview of N nodes that was a third of every Check's cost, 2N
// times. TestEncodeCheckedMatchesInfer (and decodetest.CheckEncode for the
// resources' own types) holds it to infer's result.
//
// It says false, and encodes nothing, for inputs outside what it does as
// infer does (checkedPlainly).
func EncodeChecked[I any](checked I, inputs property.Map) (property.Map, bool) {
	if !checkedPlainly[I](inputs) {
		return property.Map{}, false
	}
	return encodeChecked(checked, inputs), true
}

func encodeChecked[I any](checked I, inputs property.Map) property.Map {
	return encodeStruct(reflect.ValueOf(checked), property.New(inputs), true).AsMap()
}

// checkedPlainly: EncodeChecked encodes a Check of these inputs as infer
// does. I is a struct of plain fields (encodable), the inputs are plain
// values of it (DecodePlain) and carry no dependencies (infer would turn a
// value with dependencies into an output value, ende's forceOutput, and
// leave the secret fields inside it unmarked).
func checkedPlainly[I any](inputs property.Map) bool {
	if !encodable(reflect.TypeFor[I]()) || hasDependencies(property.New(inputs)) {
		return false
	}
	_, ok := DecodePlain[I](inputs)
	return ok
}

func hasDependencies(v property.Value) bool {
	if len(v.Dependencies()) > 0 {
		return true
	}
	switch {
	case v.IsMap():
		for _, e := range v.AsMap().All {
			if hasDependencies(e) {
				return true
			}
		}
	case v.IsArray():
		for _, e := range v.AsArray().All {
			if hasDependencies(e) {
				return true
			}
		}
	}
	return false
}

// encodable: every value of t can be encoded here (no interfaces, no
// arrays, no channels: what mapper would refuse or treat otherwise), and
// t's tags are the plain ones DecodePlain reads.
func encodable(t reflect.Type) bool {
	if v, ok := encodableTypes.Load(t); ok {
		return v.(bool)
	}
	encodableTypes.Store(t, true) // a recursive type: assume, then check
	ok := checkEncodable(t)
	encodableTypes.Store(t, ok)
	return ok
}

var encodableTypes sync.Map // reflect.Type -> bool

func checkEncodable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		return encodable(t.Elem())
	case reflect.Map:
		return t.Key().Kind() == reflect.String && encodable(t.Elem())
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Struct:
		info := infoOf(t)
		if !info.ok {
			return false
		}
		for _, f := range info.fields {
			if !encodable(t.FieldByIndex(f.index).Type) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// marks are what the request's inputs had at one path.
type marks struct{ secret, computed, empty bool }

// marksOf reads in (absent: the zero Value) as ende.walk does for a value
// of type t: an unknown's own value is not walked (it is aligned to t,
// which marks nothing), an empty list is marked whatever t is, an empty
// object only when t is not a struct.
func marksOf(in property.Value, t reflect.Type) marks {
	m := marks{secret: in.Secret(), computed: in.IsComputed()}
	if m.computed {
		return m
	}
	switch {
	case in.IsArray():
		m.empty = in.AsArray().Len() == 0
	case in.IsMap():
		m.empty = in.AsMap().Len() == 0 && deref(t).Kind() != reflect.Struct
	}
	return m
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// encodeValue encodes v, with the marks of in (the inputs at the same
// path, if hasIn). ok is false for a value left out: a nil pointer, slice
// or map where the container leaves it out (a struct field; a list or map
// keeps it as a null, inList).
func encodeValue(v reflect.Value, in property.Value, hasIn, inList bool) (property.Value, bool) {
	out, ok := encodePlain(v, in, hasIn)
	if !ok && inList {
		out, ok = property.Value{}, true
	}
	if !hasIn {
		return out, ok
	}
	// ende.Encode: a change at a path the encoding does not have is
	// skipped, unless it puts back an empty list or map; one at a path
	// that holds a null applies to the null
	m := marksOf(in, v.Type())
	if m.empty && out.IsNull() {
		if in.IsArray() {
			out = property.New([]property.Value{})
		} else {
			out = property.New(map[string]property.Value{})
		}
		ok = true
	}
	if !ok {
		return out, false
	}
	if m.computed {
		out = property.New(property.Computed)
	}
	if m.secret {
		out = out.WithSecret(true)
	}
	return out, true
}

// encodePlain is mapper's encoding of v, with the marks of in applied
// below it.
func encodePlain(v reflect.Value, in property.Value, hasIn bool) (property.Value, bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return property.Value{}, false
		}
		return encodePlain(v.Elem(), in, hasIn)
	case reflect.String:
		return property.New(v.String()), true
	case reflect.Bool:
		return property.New(v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return property.New(float64(v.Int())), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return property.New(float64(v.Uint())), true
	case reflect.Float32, reflect.Float64:
		return property.New(v.Float()), true
	case reflect.Slice:
		if v.IsNil() {
			return property.Value{}, false
		}
		return encodeSlice(v, in, hasIn), true
	case reflect.Map:
		if v.IsNil() {
			return property.Value{}, false
		}
		return encodeMap(v, in, hasIn), true
	case reflect.Struct:
		return encodeStruct(v, in, hasIn), true
	}
	panic("framework: encodeChecked of a type encodable refuses: " + v.Type().String())
}

// below is the inputs' element at key or index, when in holds one to walk
// (ende walks neither into an unknown nor into a value of another kind).
func below(in property.Value, hasIn bool, get func(property.Value) (property.Value, bool)) (property.Value, bool) {
	if !hasIn || in.IsComputed() {
		return property.Value{}, false
	}
	return get(in)
}

func encodeSlice(v reflect.Value, in property.Value, hasIn bool) property.Value {
	out := make([]property.Value, v.Len())
	for i := range out {
		e, eok := below(in, hasIn, func(in property.Value) (property.Value, bool) {
			if !in.IsArray() || i >= in.AsArray().Len() {
				return property.Value{}, false
			}
			return in.AsArray().Get(i), true
		})
		out[i], _ = encodeValue(v.Index(i), e, eok, true)
	}
	return property.New(out)
}

func encodeMap(v reflect.Value, in property.Value, hasIn bool) property.Value {
	out := make(map[string]property.Value, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		k := iter.Key().String()
		e, eok := below(in, hasIn, func(in property.Value) (property.Value, bool) {
			if !in.IsMap() {
				return property.Value{}, false
			}
			return in.AsMap().GetOk(k)
		})
		out[k], _ = encodeValue(iter.Value(), e, eok, true)
	}
	return property.New(out)
}

func encodeStruct(v reflect.Value, in property.Value, hasIn bool) property.Value {
	info := infoOf(v.Type())
	out := make(map[string]property.Value, len(info.fields))
	for _, f := range info.fields {
		if _, done := out[f.key]; done {
			continue // a shadowed field: the outer one's value and tags (mapper's FieldByName, VisibleFields)
		}
		e, eok := below(in, hasIn, func(in property.Value) (property.Value, bool) {
			if !in.IsMap() {
				return property.Value{}, false
			}
			return in.AsMap().GetOk(f.key)
		})
		enc, ok := encodeValue(v.FieldByIndex(f.index), e, eok, false)
		if !ok {
			continue
		}
		if f.secret {
			enc = enc.WithSecret(true) // applySecrets
		}
		out[f.key] = enc
	}
	return property.New(out)
}

// secretTag: the field is tagged `provider:"secret"` (introspect.ParseTag).
func secretTag(tag reflect.StructTag) bool {
	for _, part := range strings.Split(tag.Get("provider"), ",") {
		if part == "secret" {
			return true
		}
	}
	return false
}
