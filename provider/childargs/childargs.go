// Package childargs builds the inputs a component registers a child resource
// with from the child's own Go argument type: the struct of provider/proxmox
// or provider/talos that the provider's schema is inferred from, with the
// same `pulumi:"name,optional"` tags. A child input renamed or retyped there
// is then a compile error in the component (or, for a renamed tag, followed
// without a change), never a property the child silently ignores.
//
// A field whose value is not a plain Go value yet (another resource's
// output, a value unknown in a preview, a secret) is bound to a Pulumi input
// with Bind or BindPtr; the field's type and the input's element type must
// match at compile time. A field tagged `provider:"secret"` is a secret
// input whatever its value or binding.
package childargs

import (
	"fmt"
	"maps"
	"reflect"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumix"
)

// A Binding puts a Pulumi input in place of one field's value.
type Binding struct {
	addr  uintptr
	typ   reflect.Type
	value pulumi.Input
}

// Bind gives field, a field of the args passed to Map with the binding, the
// input v.
func Bind[T any](field *T, v pulumix.Input[T]) Binding {
	return Binding{addr: reflect.ValueOf(field).Pointer(), typ: reflect.TypeFor[T](), value: v}
}

// BindPtr gives field, an optional field (a pointer) of the args passed to
// Map with the binding, the input v.
func BindPtr[T any](field **T, v pulumix.Input[T]) Binding {
	return Binding{addr: reflect.ValueOf(field).Pointer(), typ: reflect.TypeFor[*T](), value: v}
}

type fieldKey struct {
	addr uintptr
	typ  reflect.Type
}

// Map converts args, a pointer to an argument struct, into resource inputs.
// A field without a pulumi tag is skipped. An optional field is left out
// when it is nil (pointer, slice, map) or the zero value; a required one is
// always set (a nil list as an empty one). The bindings replace the values
// of their fields; a binding that points at no field of args is an error.
func Map(args any, bindings ...Binding) (pulumi.Map, error) {
	v := reflect.ValueOf(args)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("childargs.Map needs a pointer to an argument struct, got %T", args)
	}
	c := &converter{bound: map[fieldKey]pulumi.Input{}, used: map[fieldKey]bool{}}
	for _, b := range bindings {
		c.bound[fieldKey{b.addr, b.typ}] = b.value
	}
	out := c.object(v.Elem())
	for k := range c.bound {
		if !c.used[k] {
			return nil, fmt.Errorf("childargs.Map: a binding of a %s points at no field of the %T given", k.typ, args)
		}
	}
	return out, nil
}

type converter struct {
	bound map[fieldKey]pulumi.Input
	used  map[fieldKey]bool
}

func (c *converter) object(v reflect.Value) pulumi.Map {
	out := pulumi.Map{}
	t := v.Type()
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("pulumi"), ",")
		if name == "" && t.Field(i).Anonymous && t.Field(i).Type.Kind() == reflect.Struct {
			// an embedded struct's fields are the args' own, as infer
			// decodes them (ConfigurationApplyPreview)
			maps.Copy(out, c.object(v.Field(i)))
			continue
		}
		if name == "" {
			continue
		}
		secret := strings.Contains(","+t.Field(i).Tag.Get("provider")+",", ",secret,")
		f := v.Field(i)
		if f.CanAddr() {
			k := fieldKey{f.Addr().Pointer(), f.Type()}
			if in, ok := c.bound[k]; ok {
				c.used[k] = true
				out[name] = secretIf(secret, in)
				continue
			}
		}
		if strings.Contains(","+opts+",", ",optional,") && f.IsZero() {
			continue
		}
		out[name] = secretIf(secret, c.value(f))
	}
	return out
}

// secretIf makes in a secret when the field is tagged `provider:"secret"`:
// that tag only reaches the schema and the provider's own outputs, so a
// child input registered in plain text would stay plain in the engine's
// view of the child's inputs (and in its state) until the provider
// answered. An unknown value stays unknown, and secret (pulumi.ToSecret
// keeps an output's known flag). A list or object that holds outputs is
// made secret entry by entry: made secret as a whole it would be one
// output, unknown as a whole as soon as one entry is (the SDK awaits every
// input inside it), where the child must see the entries that are known.
func secretIf(secret bool, in pulumi.Input) pulumi.Input {
	if !secret || in == nil {
		return in
	}
	switch v := in.(type) {
	case pulumi.Map:
		if holdsOutputs(v) {
			out := pulumi.Map{}
			for k, e := range v {
				out[k] = secretIf(true, e)
			}
			return out
		}
	case pulumi.Array:
		if holdsOutputs(v) {
			out := pulumi.Array{}
			for _, e := range v {
				out = append(out, secretIf(true, e))
			}
			return out
		}
	}
	return pulumi.ToSecret(in)
}

// holdsOutputs: in is or holds an output (a binding), whose value may not
// be known.
func holdsOutputs(in pulumi.Input) bool {
	switch v := in.(type) {
	case pulumi.Output:
		return true
	case pulumi.Map:
		for _, e := range v {
			if holdsOutputs(e) {
				return true
			}
		}
	case pulumi.Array:
		for _, e := range v {
			if holdsOutputs(e) {
				return true
			}
		}
	}
	return false
}

func (c *converter) value(v reflect.Value) pulumi.Input {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return c.value(v.Elem())
	case reflect.String:
		return pulumi.String(v.String())
	case reflect.Bool:
		return pulumi.Bool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return pulumi.Int(int(v.Int()))
	case reflect.Float32, reflect.Float64:
		return pulumi.Float64(v.Float())
	case reflect.Slice:
		out := pulumi.Array{}
		for i := range v.Len() {
			out = append(out, c.value(v.Index(i)))
		}
		return out
	case reflect.Map:
		out := pulumi.Map{}
		it := v.MapRange()
		for it.Next() {
			out[it.Key().String()] = c.value(it.Value())
		}
		return out
	case reflect.Struct:
		return c.object(v)
	}
	panic(fmt.Sprintf("childargs: no input for a %s", v.Type()))
}

// Name is the property name of field, a top-level field of args (a pointer
// to an argument struct), for the resource options that name properties
// (pulumi.IgnoreChanges). It panics when field is not one: a programming
// error that every registration of the child would hit.
func Name[T any](args any, field *T) string {
	v := reflect.ValueOf(args).Elem()
	addr := reflect.ValueOf(field).Pointer()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Addr().Pointer() == addr && f.Type() == reflect.TypeFor[T]() {
			if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("pulumi"), ","); name != "" {
				return name
			}
		}
	}
	panic(fmt.Sprintf("childargs.Name: the field is not a tagged field of the %T given", args))
}
