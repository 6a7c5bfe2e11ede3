package framework

import (
	"fmt"
	"sync"

	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	rpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The engine's Check and Diff requests carry a resource's properties up to
// three times, and the process decoded every copy from protobuf before any
// handler ran, only to drop one of them unread:
//
//   - a Check's old_outputs (the resource's last outputs, sent by engines
//     that say sends_old_outputs_to_check in their handshake, pulumi
//     proto/pulumi/provider.proto CheckRequest): pulumi-go-provider v1.5.0
//     reads only olds and news (provider.go Check and CheckConfig);
//   - a Diff's old_inputs of a resource whose Diff is its own (Resource:
//     infer's typed DiffRequest has no old inputs, infer/resource.go
//     DiffRequest), which pulumi-go-provider also converted to a
//     property.Map (provider.go Diff, getMap) before that Diff ignored it;
//     but for the keys InputsOnly puts back into the state from them.
//
// In a no-op preview those are about a third of what a ConfigurationApply's
// or VirtualMachine's Check and Diff move (issue 14). leanCodec is gRPC's
// proto codec with these fields cut from the wire bytes before decoding.
// A Diff's old inputs are cut only for the resource types whose Diff went
// through Resource's own controller once already (ownDiff): a resource
// with infer's default Diff, and the provider's DiffConfig (the same
// message, ConfigDiff reads its old inputs), keep them.
type leanCodec struct{ encoding.CodecV2 }

// Field numbers in pulumi proto/pulumi/provider.proto (sdk/proto/go
// provider.pb.go: CheckRequest.OldOutputs, DiffRequest.OldInputs and Type).
const (
	checkOldOutputs     protowire.Number = 9
	diffOldInputsNumber protowire.Number = 6
	diffType            protowire.Number = 8
)

// ownDiff holds the type tokens of resources whose Diff is their own
// (diffVia): their Diffs need no old inputs.
var ownDiff sync.Map

func init() {
	// gRPC's own proto codec registers itself in its package's init, which
	// runs before this one (this package imports it): ours replaces it.
	encoding.RegisterCodecV2(leanCodec{encoding.GetCodecV2(grpcproto.Name)})
}

func (c leanCodec) Unmarshal(data mem.BufferSlice, v any) error {
	var drop protowire.Number
	switch v.(type) {
	case *rpc.CheckRequest:
		drop = checkOldOutputs
	case *rpc.DiffRequest:
		drop = diffOldInputsNumber
	case *rpc.RegisterResourceResponse:
		return c.unmarshalRegistered(data, v)
	default:
		return c.CodecV2.Unmarshal(data, v)
	}
	b := data.Materialize()
	lean, err := withoutField(b, drop, v)
	if err != nil {
		return err
	}
	return proto.Unmarshal(lean, v.(proto.Message))
}

// withoutField is the message b without its top-level field drop: for a
// DiffRequest only when its type's Diff is its own. b itself when the
// field is not there.
func withoutField(b []byte, drop protowire.Number, v any) ([]byte, error) {
	at, typ := -1, ""
	for off := 0; off < len(b); {
		num, wt, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return nil, fmt.Errorf("decoding %T: %w", v, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, wt, b[off+n:])
		if m < 0 {
			return nil, fmt.Errorf("decoding %T: %w", v, protowire.ParseError(m))
		}
		switch {
		case num == drop && at < 0:
			at = off
		case num == drop:
			return b, nil // twice (merged by proto): left as it is
		case num == diffType && wt == protowire.BytesType:
			t, _ := protowire.ConsumeBytes(b[off+n:])
			typ = string(t)
		}
		off += n + m
	}
	if at < 0 {
		return b, nil
	}
	_, _, n := protowire.ConsumeField(b[at:])
	if _, isDiff := v.(*rpc.DiffRequest); isDiff {
		if _, own := ownDiff.Load(typ); !own {
			return b, nil
		}
		if keys := oldInputsRead(typ); len(keys) > 0 {
			// InputsOnly puts these back into the state: only they stay
			_, _, tag := protowire.ConsumeTag(b[at:])
			obj, _ := protowire.ConsumeBytes(b[at+tag:])
			fields, err := keptFields(obj, keys)
			if err != nil {
				return nil, fmt.Errorf("decoding %T: %w", v, err)
			}
			out := append([]byte{}, b[:at]...)
			out = protowire.AppendTag(out, drop, protowire.BytesType)
			out = protowire.AppendBytes(out, fields)
			return append(out, b[at+n:]...), nil
		}
	}
	return append(b[:at:at], b[at+n:]...), nil
}

// diffOldInputs are, by type token, the old inputs a Diff reads although
// the resource's Diff is its own: the keys InputsOnly puts back into its
// state from them (InputsOnly.Wrap records them).
var diffOldInputs struct {
	sync.Mutex
	byType map[string]map[string]bool
}

func readsOldInputs(token string, keys []string) {
	diffOldInputs.Lock()
	defer diffOldInputs.Unlock()
	if diffOldInputs.byType == nil {
		diffOldInputs.byType = map[string]map[string]bool{}
	}
	set := map[string]bool{}
	for k := range diffOldInputs.byType[token] {
		set[k] = true
	}
	for _, k := range keys {
		set[k] = true
	}
	diffOldInputs.byType[token] = set // a new map: readers hold the old one
}

func oldInputsRead(token string) map[string]bool {
	diffOldInputs.Lock()
	defer diffOldInputs.Unlock()
	return diffOldInputs.byType[token]
}

// A component registers its children through the Go SDK, which decodes
// every output of a registered resource from the engine's answer and
// converts each to its own property model (pulumi sdk go/pulumi/context.go
// resolve: plugin.UnmarshalProperties of the whole object), though the
// component reads a few of them: its child's Go type names them
// (KeepOutputs). In a no-op preview the answer is the child's whole state,
// a ConfigurationApply's 19 KB of which TalosCluster reads nothing (issue
// 14). The answers for the types KeepOutputs named keep only those outputs.

// keptOutputs are, by resource type token, the outputs a component reads of
// the children of that type it registers (a set of names).
var keptOutputs struct {
	sync.Mutex
	byType map[string]map[string]bool
}

// KeepOutputs says that this process reads, of the resources of type token
// it registers, only the outputs named in keys (and in those of other calls
// for the type): the engine's answers to those registrations lose the
// others before they are decoded. A type never named keeps all of them.
func KeepOutputs(token string, keys []string) {
	keptOutputs.Lock()
	defer keptOutputs.Unlock()
	if keptOutputs.byType == nil {
		keptOutputs.byType = map[string]map[string]bool{}
	}
	set := map[string]bool{}
	for k := range keptOutputs.byType[token] {
		set[k] = true
	}
	for _, k := range keys {
		set[k] = true
	}
	keptOutputs.byType[token] = set // a new map: readers hold the old one
}

// keptOf is KeepOutputs's set for token; ok is false for a type never named.
func keptOf(token string) (kept map[string]bool, ok bool) {
	keptOutputs.Lock()
	defer keptOutputs.Unlock()
	kept, ok = keptOutputs.byType[token]
	return kept, ok
}

// Field numbers in pulumi proto/pulumi/resource.proto (RegisterResourceResponse
// urn and object) and google/protobuf/struct.proto (Struct.fields, a map:
// entries of key 1 and value 2).
const (
	registeredURN    protowire.Number = 1
	registeredObject protowire.Number = 3
	structFields     protowire.Number = 1
	mapEntryKey      protowire.Number = 1
)

func (c leanCodec) unmarshalRegistered(data mem.BufferSlice, v any) error {
	b := data.Materialize()
	lean, err := withKeptOutputs(b)
	if err != nil {
		return fmt.Errorf("decoding %T: %w", v, err)
	}
	return proto.Unmarshal(lean, v.(proto.Message))
}

// withKeptOutputs is a RegisterResourceResponse b whose object has only
// the outputs KeepOutputs named for its type; b itself for another type.
func withKeptOutputs(b []byte) ([]byte, error) {
	var urn string
	objAt, objLen := -1, 0
	for off := 0; off < len(b); {
		num, wt, n := protowire.ConsumeField(b[off:])
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		if wt == protowire.BytesType {
			_, _, tag := protowire.ConsumeTag(b[off:])
			val, _ := protowire.ConsumeBytes(b[off+tag:])
			switch num {
			case registeredURN:
				urn = string(val)
			case registeredObject:
				if objAt >= 0 {
					return b, nil // twice (merged by proto): left as it is
				}
				objAt, objLen = off, n
			}
		}
		off += n
	}
	if objAt < 0 || !presource.URN(urn).IsValid() {
		return b, nil
	}
	kept, ok := keptOf(string(presource.URN(urn).Type()))
	if !ok {
		return b, nil
	}
	_, _, tag := protowire.ConsumeTag(b[objAt:])
	obj, _ := protowire.ConsumeBytes(b[objAt+tag:])
	fields, err := keptFields(obj, kept)
	if err != nil {
		return nil, err
	}
	out := append([]byte{}, b[:objAt]...)
	out = protowire.AppendTag(out, registeredObject, protowire.BytesType)
	out = protowire.AppendBytes(out, fields)
	return append(out, b[objAt+objLen:]...), nil
}

// keptFields are the entries of the Struct obj whose keys are in kept.
func keptFields(obj []byte, kept map[string]bool) ([]byte, error) {
	var out []byte
	for off := 0; off < len(obj); {
		num, wt, n := protowire.ConsumeField(obj[off:])
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		field := obj[off : off+n]
		off += n
		if num != structFields || wt != protowire.BytesType {
			out = append(out, field...)
			continue
		}
		_, _, tag := protowire.ConsumeTag(field)
		entry, _ := protowire.ConsumeBytes(field[tag:])
		if kept[entryKey(entry)] {
			out = append(out, field...)
		}
	}
	return out, nil
}

// entryKey is the key of a map entry.
func entryKey(entry []byte) string {
	for off := 0; off < len(entry); {
		num, wt, n := protowire.ConsumeField(entry[off:])
		if n < 0 {
			return ""
		}
		if num == mapEntryKey && wt == protowire.BytesType {
			_, _, tag := protowire.ConsumeTag(entry[off:])
			k, _ := protowire.ConsumeBytes(entry[off+tag:])
			return string(k)
		}
		off += n
	}
	return ""
}
