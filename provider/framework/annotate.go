package framework

import (
	"reflect"
	"sync"

	"github.com/pulumi/pulumi-go-provider/infer"
)

// Annotate runs describe, the body of r's Annotate method, once per type and
// replays what it recorded on every later call.
//
// infer (pulumi-go-provider v1.5.0) annotates a type afresh on every request
// that needs its schema, not once per process: infer/schema.go getAnnotated
// runs the type's Annotate on a new introspect.Annotator whenever Check
// applies defaults (defaultsWalker) and whenever Diff of a resource with an
// Update rebuilds the resource's schema (infer/resource.go
// derivedResourceController.Diff -> GetSchema, even when the resource has a
// Diff of its own and the schema goes unused). Each Describe then finds its
// field by walking reflect.VisibleFields of the whole struct
// (internal/introspect fieldMatcher.GetField): quadratic in the fields,
// allocated anew, per type per request. In a 60-node preview that was about
// a tenth of the provider's CPU, and more in GC.
//
// What Annotate records depends on the type only (descriptions, defaults,
// token, aliases, deprecations: constants of our code), so the first call's
// record holds for the process. It is taken from the annotator's exported
// fields by reflection, because infer's annotator type is internal; when
// that type is not the struct this expects (a newer infer) or already holds
// something, describe simply runs every time.
func Annotate[T any](a infer.Annotator, _ *T, describe func()) {
	dst, ok := annotatorFields(a)
	if !ok || !emptyFields(dst) {
		describe()
		return
	}
	key := reflect.TypeFor[T]()
	if rec, ok := annotations.Load(key); ok {
		replay(dst, rec.(reflect.Value))
		return
	}
	describe()
	annotations.Store(key, record(dst))
}

// annotations are the records by annotated type.
var annotations sync.Map

// annotatorFields is the struct behind a, if it is a pointer to one.
func annotatorFields(a infer.Annotator) (reflect.Value, bool) {
	v := reflect.ValueOf(a)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	return v.Elem(), true
}

// emptyFields reports that every exported field is empty (a fresh annotator).
func emptyFields(v reflect.Value) bool {
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Map, reflect.Slice, reflect.String:
			if f.Len() > 0 {
				return false
			}
		default:
			if !f.IsZero() {
				return false
			}
		}
	}
	return true
}

// record copies the exported fields of an annotator after describe.
func record(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	replay(out, v)
	return out
}

// replay copies the exported fields of src into dst: map entries added,
// slices appended (copied), other values set.
func replay(dst, src reflect.Value) {
	for i := range src.NumField() {
		if !src.Type().Field(i).IsExported() {
			continue
		}
		s, d := src.Field(i), dst.Field(i)
		switch s.Kind() {
		case reflect.Map:
			if s.IsNil() {
				continue
			}
			if d.IsNil() {
				d.Set(reflect.MakeMapWithSize(s.Type(), s.Len()))
			}
			iter := s.MapRange()
			for iter.Next() {
				d.SetMapIndex(iter.Key(), copyValue(iter.Value()))
			}
		case reflect.Slice:
			if s.Len() > 0 {
				d.Set(reflect.AppendSlice(d, copyValue(s)))
			}
		default:
			d.Set(s)
		}
	}
}

// copyValue copies a slice (DefaultEnvs' values), so that no two annotators
// share one backing array; other values are immutable here.
func copyValue(v reflect.Value) reflect.Value {
	if v.Kind() != reflect.Slice || v.IsNil() {
		return v
	}
	out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
	reflect.Copy(out, v)
	return out
}
