package childargs

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// Decode reads a child's outputs as the engine keeps them in a stack's
// state (JSON values: numbers as float64, objects as map[string]any) into
// target, a pointer to the child's State type, by the same pulumi tags (the
// embedded Args included). A property the State type does not have is
// skipped, a missing one leaves its field zero; a value of another shape
// is an error that names its property.
func Decode(outputs map[string]any, target any) error {
	v := reflect.ValueOf(target)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("childargs.Decode needs a pointer to a State struct, got %T", target)
	}
	return decodeObject(outputs, v.Elem(), "")
}

func decodeObject(obj map[string]any, v reflect.Value, path string) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := decodeObject(obj, v.Field(i), path); err != nil {
				return err
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("pulumi"), ",")
		raw, ok := obj[name]
		if name == "" || !ok || raw == nil {
			continue
		}
		if err := decodeValue(raw, v.Field(i), path+name); err != nil {
			return err
		}
	}
	return nil
}

func decodeValue(raw any, v reflect.Value, path string) error {
	wrong := func() error { return fmt.Errorf("%s: a %T where a %s was expected", path, raw, v.Type()) }
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		if err := decodeValue(raw, elem.Elem(), path); err != nil {
			return err
		}
		v.Set(elem)
	case reflect.String:
		s, ok := raw.(string)
		if !ok {
			return wrong()
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			return wrong()
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := raw.(float64)
		if !ok || n != math.Trunc(n) {
			return wrong()
		}
		v.SetInt(int64(n))
	case reflect.Float32, reflect.Float64:
		n, ok := raw.(float64)
		if !ok {
			return wrong()
		}
		v.SetFloat(n)
	case reflect.Slice:
		l, ok := raw.([]any)
		if !ok {
			return wrong()
		}
		s := reflect.MakeSlice(v.Type(), len(l), len(l))
		for i, e := range l {
			if err := decodeValue(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Map:
		m, ok := raw.(map[string]any)
		if !ok {
			return wrong()
		}
		out := reflect.MakeMapWithSize(v.Type(), len(m))
		for k, e := range m {
			ev := reflect.New(v.Type().Elem()).Elem()
			if err := decodeValue(e, ev, path+"."+k); err != nil {
				return err
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), ev)
		}
		v.Set(out)
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			return wrong()
		}
		return decodeObject(m, v, path+".")
	default:
		return wrong()
	}
	return nil
}
