package childargs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

type nic struct {
	Bridge string  `pulumi:"bridge"`
	VLAN   *int    `pulumi:"vlanId,optional"`
	MTU    int     `pulumi:"mtu,optional"`
	Model  *string `pulumi:"model,optional"`
}

type args struct {
	Node    string            `pulumi:"node"`
	ISO     *string           `pulumi:"iso,optional"`
	Started *bool             `pulumi:"started,optional"`
	Tags    []string          `pulumi:"tags,optional"`
	Hosts   []string          `pulumi:"hosts"`
	Labels  map[string]string `pulumi:"labels,optional"`
	NICs    []nic             `pulumi:"networkDevices,optional"`
	Skip    bool              `pulumi:"skip,optional"`
	Untold  string
}

func ptr[T any](v T) *T { return &v }

// The inputs are what a hand-written map of the same values would be: an
// optional value set to its zero value through a pointer stays, an unset
// optional one is left out, a required list is set even when nil.
func TestMapFollowsTheTags(t *testing.T) {
	a := &args{
		Node: "pve1", Started: ptr(false), Tags: []string{}, Labels: map[string]string{"a": "b"},
		NICs: []nic{{Bridge: "vmbr0", VLAN: ptr(0)}}, Untold: "x",
	}
	got, err := Map(a)
	if err != nil {
		t.Fatal(err)
	}
	want := pulumi.Map{
		"node": pulumi.String("pve1"), "started": pulumi.Bool(false), "tags": pulumi.Array{},
		"hosts": pulumi.Array{}, "labels": pulumi.Map{"a": pulumi.String("b")},
		"networkDevices": pulumi.Array{pulumi.Map{"bridge": pulumi.String("vmbr0"), "vlanId": pulumi.Int(0)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

func TestBindingsReplaceTheirFields(t *testing.T) {
	a := &args{Node: "pve1", NICs: []nic{{Bridge: "vmbr0"}, {Bridge: "vmbr1"}}}
	iso := pulumi.String("local:iso/a.iso").ToStringOutput()
	bridge := pulumi.String("vmbr9").ToStringOutput()
	got, err := Map(a, BindPtr(&a.ISO, iso), Bind(&a.NICs[1].Bridge, bridge))
	if err != nil {
		t.Fatal(err)
	}
	if got["iso"] != iso {
		t.Errorf("iso: got %#v, want the bound output", got["iso"])
	}
	nics := got["networkDevices"].(pulumi.Array)
	if nics[0].(pulumi.Map)["bridge"] != pulumi.String("vmbr0") || nics[1].(pulumi.Map)["bridge"] != bridge {
		t.Errorf("networkDevices: got %#v, want the second bridge bound", nics)
	}
	// The bound output keeps what it is (unknown, secret): it is handed on as is.
	if _, ok := got["iso"].(pulumi.StringOutput); !ok {
		t.Errorf("iso became %T", got["iso"])
	}
}

// A binding of a field of another value (a copy of the args, a field of a
// list entry that was replaced) is an error, not a value silently dropped.
func TestABindingElsewhereIsAnError(t *testing.T) {
	a := &args{Node: "pve1"}
	other := *a
	_, err := Map(a, BindPtr(&other.ISO, pulumi.String("x")))
	if err == nil || !strings.Contains(err.Error(), "points at no field") {
		t.Fatalf("want an error for a binding outside the args, got %v", err)
	}
	if _, err := Map(*a); err == nil {
		t.Fatal("want an error for args that are not a pointer")
	}
}

func TestNameIsTheTag(t *testing.T) {
	a := &args{}
	if got := Name(a, &a.ISO); got != "iso" {
		t.Errorf("Name(ISO) = %q, want iso", got)
	}
	if got := Name(a, &a.Node); got != "node" {
		t.Errorf("Name(Node) = %q, want node (the first field, at the struct's own address)", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Name of an untagged field did not panic")
		}
	}()
	Name(a, &a.Untold)
}

type state struct {
	args
	VMID   int      `pulumi:"vmId"`
	Status string   `pulumi:"status"`
	MACs   []string `pulumi:"macAddresses"`
}

// Decode reads back what Map (and the engine) wrote: JSON numbers into
// ints and optional pointers, objects into structs, the embedded Args.
func TestDecodeReadsAStateBack(t *testing.T) {
	outputs := map[string]any{
		"node": "pve1", "iso": "local:iso/a.iso", "started": false, "vmId": float64(104), "status": "running",
		"macAddresses":   []any{"BC:24:11:00:00:01"},
		"networkDevices": []any{map[string]any{"bridge": "vmbr0", "vlanId": float64(20)}},
		"labels":         map[string]any{"a": "b"},
		"unknownToUs":    "ignored",
	}
	var got state
	if err := Decode(outputs, &got); err != nil {
		t.Fatal(err)
	}
	want := state{
		args: args{Node: "pve1", ISO: ptr("local:iso/a.iso"), Started: ptr(false), Labels: map[string]string{"a": "b"}, NICs: []nic{{Bridge: "vmbr0", VLAN: ptr(20)}}},
		VMID: 104, Status: "running", MACs: []string{"BC:24:11:00:00:01"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestDecodeNamesAValueOfAnotherShape(t *testing.T) {
	var s state
	err := Decode(map[string]any{"networkDevices": []any{map[string]any{"vlanId": "20"}}}, &s)
	if err == nil || !strings.Contains(err.Error(), "networkDevices[0].vlanId") {
		t.Fatalf("want an error naming networkDevices[0].vlanId, got %v", err)
	}
	if err := Decode(map[string]any{"vmId": 1.5}, &s); err == nil {
		t.Fatal("1.5 was read as an int")
	}
}

type derived struct {
	View *string `pulumi:"view,optional"`
}

type withEmbedded struct {
	Node string `pulumi:"node"`
	derived
}

// An embedded struct's fields are the args' own (infer decodes them so):
// set or bound, they are inputs like the others; unset optional ones are
// left out.
func TestEmbeddedFieldsAreTheArgsOwn(t *testing.T) {
	a := &withEmbedded{Node: "pve1"}
	got, err := Map(a)
	if err != nil || !reflect.DeepEqual(got, pulumi.Map{"node": pulumi.String("pve1")}) {
		t.Fatalf("unset: got %#v, %v", got, err)
	}
	view := pulumi.String("v").ToStringOutput()
	got, err = Map(a, BindPtr(&a.View, view))
	if err != nil || got["view"] != view {
		t.Fatalf("bound: got %#v, %v; want view bound", got, err)
	}
}
