package framework

import "github.com/pulumi/pulumi/sdk/v3/go/property"

// keepUnknowns puts back, into the inputs a Check returns (out), the
// unknowns of the request's inputs (in) that the encoding dropped. infer
// decodes an unknown as its field's zero value and, for an optional
// (pointer) field, the nil it decodes to is left out of the encoding, and
// the unknown with it (ende.Encoder.Encode skips a change at a path the
// encoding does not have): an unknown `healthGate.vm` came back as no
// value, which the preview showed as null. Where out has a value or a null
// at the path, or the unknown's parent, nothing changes: a Check may have
// set it. A Check that removes a field whose input was unknown cannot know
// what it removes; none of ours does.
func keepUnknowns(out, in property.Map) property.Map {
	kept, _ := keepUnknownsIn(out, in)
	return kept
}

// keepUnknownsIn is keepUnknowns saying whether it put anything back, so
// that a caller one level up knows without comparing the maps.
func keepUnknownsIn(out, in property.Map) (property.Map, bool) {
	changed := false

	for k, v := range in.All {
		got, ok := out.GetOk(k)
		if v.IsComputed() && (!ok || got.IsNull()) {
			out, changed = out.Set(k, property.New(property.Computed).WithSecret(v.Secret() || got.Secret())), true
		} else if kept, ch := keepUnknownsBelow(got, v); ok && ch {
			out, changed = out.Set(k, kept), true
		}
	}

	return out, changed
}

// keepUnknownsBelow is keepUnknowns inside a map or list value got, from
// in at the same path; changed is false when nothing was put back (got is
// returned as it is: an empty list stays an empty list).
func keepUnknownsBelow(got, in property.Value) (property.Value, bool) {
	switch {
	case in.IsMap() && got.IsMap():
		m, changed := keepUnknownsIn(got.AsMap(), in.AsMap())
		if !changed {
			return got, false
		}

		return property.New(m).WithSecret(got.Secret()), true
	case in.IsArray() && got.IsArray() && in.AsArray().Len() == got.AsArray().Len():
		elems, changed := got.AsArray().AsSlice(), false

		for i, v := range in.AsArray().All {
			g := elems[i]
			if v.IsComputed() && g.IsNull() {
				elems[i], changed = property.New(property.Computed).WithSecret(v.Secret() || g.Secret()), true
			} else if kept, ch := keepUnknownsBelow(g, v); ch {
				elems[i], changed = kept, true
			}
		}

		if !changed {
			return got, false
		}

		return property.New(elems).WithSecret(got.Secret()), true
	}

	return got, false
}
