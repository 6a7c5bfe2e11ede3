package framework

import (
	"context"
	"encoding"
	"reflect"
	"strings"
	"sync"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// DecodePlain decodes m into a T the way infer does (infer/internal/ende
// Decode: ende.simplify, then the Pulumi SDK's mapper.Decode from
// PropertyMap.Mappable), for the values it knows how to, and says false for
// anything else, which then goes to infer: assets,
// archives, resource references, a null inside a list or map, a key T has
// no field for, a required field missing, a value of another type, an
// interface or other unusual field type. What it does decode it decodes as
// mapper does:
//   - secrets and dependencies are dropped (ende keeps them aside for the
//     encoder, which a Diff does not use);
//   - a null field is a missing one: left at its zero value when optional;
//   - a number goes to any numeric field by Go conversion, a string to a
//     string field of any named type (enums);
//   - an empty list gives a nil slice (mapper appends to a nil slice), a map
//     always a non-nil map, even an empty one;
//   - a pointer field gets a new value, a list of structs their values or
//     pointers to them;
//   - an unknown value (a preview's) decodes as infer aligns it to its type
//     (decodeUnknown);
//   - the fields of an embedded struct are read from the same object.
//
// Why: infer's decoding walks and copies the whole value twice (simplify,
// Mappable) and then sets every field through reflection with tags parsed
// anew on every call (mapper.structFieldsTags); in a no-op preview of N nodes
// that was the largest part of the Diff requests' cost, N times per
// resource type. TestDecodePlainMatchesInfer holds it to infer's result.
func DecodePlain[T any](m property.Map) (T, bool) {
	var out T
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return out, false
	}
	ok := decodeStruct(m, reflect.ValueOf(&out).Elem())
	return out, ok
}

// structField is a field mapper decodes: its key, whether it may be
// missing, and where it is (an index path through embedded structs).
type structField struct {
	key      string
	optional bool
	secret   bool // tagged `provider:"secret"` (encodeChecked)
	index    []int
}

// structInfo is what decodeStruct needs of a struct type, worked out once.
type structInfo struct {
	fields []structField // in mapper's order; a key may repeat (shadowing)
	byKey  map[string]bool
	ok     bool // false: a tag this decoder leaves to infer
}

var structInfos sync.Map // reflect.Type -> *structInfo

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func infoOf(t reflect.Type) *structInfo {
	if v, ok := structInfos.Load(t); ok {
		return v.(*structInfo)
	}
	info := &structInfo{byKey: map[string]bool{}, ok: true}
	// mapper.structFields: the type's fields, then those of embedded
	// structs (breadth first); mapper sets each by name (FieldByName).
	type pending struct{ t reflect.Type }
	queue := []pending{{t: t}}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for i := range cur.t.NumField() {
			f := cur.t.Field(i)
			if f.Anonymous {
				if f.Type.Kind() == reflect.Struct {
					queue = append(queue, pending{t: f.Type})
				}
				continue
			}
			if f.Tag.Get("json") != "" {
				info.ok = false // mapper reads json tags too
			}
			tag := f.Tag.Get("pulumi")
			if tag == "" {
				continue
			}
			parts := strings.Split(tag, ",")
			sf := structField{key: parts[0], secret: secretTag(f.Tag)}
			for _, part := range parts[1:] {
				switch part {
				case "optional", "omitempty":
					sf.optional = true
				default:
					info.ok = false // skip, or what mapper asserts on
				}
			}
			if sf.key == "-" || sf.key == "" {
				info.ok = false
			}
			// mapper sets the field of that name (FieldByName): a field
			// shadowed by an outer one of the same name (VirtualMachineState's
			// vmId over its args') decodes into the outer one, twice
			byName, found := t.FieldByName(f.Name)
			if !found || !byName.IsExported() {
				info.ok = false
			}
			sf.index = byName.Index
			info.byKey[sf.key] = true
			info.fields = append(info.fields, sf)
		}
	}
	actual, _ := structInfos.LoadOrStore(t, info)
	return actual.(*structInfo)
}

func decodeStruct(m property.Map, dst reflect.Value) bool {
	info := infoOf(dst.Type())
	if !info.ok {
		return false
	}
	for k := range m.All {
		if !info.byKey[k] {
			return false // mapper: unrecognized field
		}
	}
	for _, f := range info.fields {
		v := m.Get(f.key)
		if v.IsNull() {
			if !f.optional {
				return false // mapper: missing required field
			}
			continue
		}
		if !decodeValue(v, dst.FieldByIndex(f.index)) {
			return false
		}
	}
	return true
}

// decodeValue sets dst from a value that is not null.
func decodeValue(v property.Value, dst reflect.Value) bool {
	if v.IsComputed() {
		return decodeUnknown(dst)
	}
	if v.IsNull() {
		return false
	}
	t := dst.Type()
	switch t.Kind() {
	case reflect.Pointer:
		elem := reflect.New(t.Elem())
		if !decodeValue(v, elem.Elem()) {
			return false
		}
		dst.Set(elem)
		return true
	case reflect.String:
		if !v.IsString() {
			return false
		}
		dst.SetString(v.AsString())
		return true
	case reflect.Bool:
		if !v.IsBool() {
			return false
		}
		dst.SetBool(v.AsBool())
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if !v.IsNumber() {
			return false
		}
		dst.Set(reflect.ValueOf(v.AsNumber()).Convert(t)) // as mapper converts
		return true
	case reflect.Slice:
		return decodeSlice(v, dst)
	case reflect.Map:
		return decodeMap(v, dst)
	case reflect.Struct:
		if !v.IsMap() || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return false
		}
		return decodeStruct(v.AsMap(), dst)
	default:
		return false
	}
}

func decodeSlice(v property.Value, dst reflect.Value) bool {
	t := dst.Type()
	if !v.IsArray() || !plainElem(t.Elem()) {
		return false
	}
	arr := v.AsArray()
	if arr.Len() == 0 {
		return true // mapper: a nil slice
	}
	out := reflect.MakeSlice(t, arr.Len(), arr.Len())
	for i, e := range arr.All {
		if !decodeValue(e, out.Index(i)) {
			return false
		}
	}
	dst.Set(out)
	return true
}

func decodeMap(v property.Value, dst reflect.Value) bool {
	t := dst.Type()
	if !v.IsMap() || t.Key().Kind() != reflect.String || !plainElem(t.Elem()) {
		return false
	}
	m := v.AsMap()
	out := reflect.MakeMapWithSize(t, m.Len())
	for k, e := range m.All {
		elem := reflect.New(t.Elem()).Elem()
		if !decodeValue(e, elem) {
			return false
		}
		out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), elem)
	}
	dst.Set(out)
	return true
}

// plainElem: element types of lists and maps this decoder handles as mapper
// does (no interfaces, no byte slices: mapper would assign those as they
// come).
func plainElem(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Uint8:
		return false
	}
	return true
}

// decodeUnknown sets dst as infer decodes an unknown value: ende.walk
// aligns it to the field's type (alignTypes; the unknown's element is ""):
// a zero scalar, no list (mapper makes a nil slice of an empty one), an
// empty map, a struct with its required fields aligned in turn and its
// optional ones left out; mapper then allocates every pointer on the way.
func decodeUnknown(dst reflect.Value) bool {
	t := dst.Type()
	switch t.Kind() {
	case reflect.Pointer:
		elem := reflect.New(t.Elem())
		if !decodeUnknown(elem.Elem()) {
			return false
		}
		dst.Set(elem)
		return true
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true // left at its zero value
	case reflect.Slice:
		return plainElem(t.Elem())
	case reflect.Map:
		if t.Key().Kind() != reflect.String || !plainElem(t.Elem()) {
			return false
		}
		dst.Set(reflect.MakeMap(t))
		return true
	case reflect.Struct:
		info := infoOf(t)
		if !info.ok || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return false
		}
		for _, f := range info.fields {
			if !f.optional && !decodeUnknown(dst.FieldByIndex(f.index)) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// DecodeInputs is infer.DefaultCheck for a Check's new inputs of a type
// without defaults: DecodePlain when it can, else DefaultCheck itself.
// DefaultCheck decodes through infer and then walks the value for defaults
// (getAnnotated for every struct in it); a type without any has nothing to
// gain from that walk. infer encodes the checked inputs with the encoder of
// a decoding of the same inputs either way (infer/resource.go Check: the one
// DefaultCheck leaves in ctx, else decodeCheckingMapErrors of req.Inputs).
// Only for types decodetest.CheckNoDefaults holds to DefaultCheck.
func DecodeInputs[T any](ctx context.Context, m property.Map) (T, []p.CheckFailure, error) {
	if v, ok := DecodePlain[T](m); ok {
		return v, nil, nil
	}
	return infer.DefaultCheck[T](ctx, m)
}
