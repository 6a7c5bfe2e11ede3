package talosapi

import (
	"errors"
	"strings"
	"testing"

	configpb "github.com/siderolabs/talos/pkg/machinery/api/resource/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/proto"
)

// A running configuration that does not parse (a node on a newer Talos
// whose field changed type, say) must not put configloader's text into the
// read's error: go-yaml's type errors quote the value, which can be a
// secret.
func TestActiveConfigParseErrorWithholdsValues(t *testing.T) {
	t.Parallel()

	const secret = "hunter2"

	text := "version: v1alpha1\nmachine:\n  type: worker\n  install: " + secret + "\ncluster:\n  id: x\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: n1\n"

	// The premise: configloader's own error quotes the value.
	if _, err := configloader.NewFromBytes([]byte(text)); err == nil || !strings.Contains(err.Error(), secret) {
		t.Fatalf("configloader's error does not quote the value, the test proves nothing: %v", err)
	}

	b, err := proto.Marshal(&configpb.MachineConfigSpec{YamlMarshalled: []byte(text)})
	if err != nil {
		t.Fatal(err)
	}

	var spec machineConfigSpec

	err = spec.UnmarshalProto(nil, b)
	if !errors.Is(err, errConfigParse) {
		t.Fatalf("UnmarshalProto = %v; want errConfigParse", err)
	}

	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error quotes the value: %v", err)
	}
}
