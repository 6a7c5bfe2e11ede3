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

// A component registers its children through the Go SDK, which decodes
// every output of a registered resource from the engine's answer and
// converts each to its own property model (pulumi sdk go/pulumi/context.go
// resolve: plugin.UnmarshalProperties of the whole object), though the
// component reads a few of them: its child's Go type names them
// (KeepOutputs). In a no-op preview the answer is the child's whole state,
// a ConfigurationApply's 19 KB of which TalosCluster reads nothing (issue
// 14). leanCodec is gRPC's proto codec, but the answers for the types
// KeepOutputs named keep only those outputs before they are decoded.
//
// (A cut of Check's old_outputs and Diff's old_inputs was removed: its
// gain was inside the benchmark's round spread, and it tied every Diff
// wrapper's old-input reads to a registry.)
type leanCodec struct{ encoding.CodecV2 }

func init() {
	// gRPC's own proto codec registers itself in its package's init, which
	// runs before this one (this package imports it): ours replaces it.
	encoding.RegisterCodecV2(leanCodec{encoding.GetCodecV2(grpcproto.Name)})
}

// LeanCodecActive says whether gRPC's "proto" codec is leanCodec: a
// package initialised after this one can register its own under the name
// (siderolabs/proto-codec does), which would silently undo the trimming.
func LeanCodecActive() bool {
	_, ok := encoding.GetCodecV2(grpcproto.Name).(leanCodec)
	return ok
}

func (c leanCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if _, ok := v.(*rpc.RegisterResourceResponse); ok {
		return c.unmarshalRegistered(data, v)
	}
	return c.CodecV2.Unmarshal(data, v)
}

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
// The set holds for every registration of token in the process, whatever
// struct it resolves into: call it once per type, with the names of the
// only struct the process reads that type's outputs through.
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
