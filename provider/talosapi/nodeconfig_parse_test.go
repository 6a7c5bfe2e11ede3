package talosapi

import (
	"context"
	"strings"
	"testing"

	"github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/cosi-project/runtime/pkg/state"
	cosiclient "github.com/cosi-project/runtime/pkg/state/protobuf/client"
	configpb "github.com/siderolabs/talos/pkg/machinery/api/resource/config"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/proto"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// configStates answers COSI Get of MachineConfig resources with texts by
// ID, as apid does (the resource's spec is MachineConfigSpec's proto; an
// ID it lacks is NotFound). Nothing else is served.
type configStates struct {
	v1alpha1.StateClient

	texts map[string]string
}

func (s configStates) Get(_ context.Context, in *v1alpha1.GetRequest, _ ...grpc.CallOption) (*v1alpha1.GetResponse, error) {
	text, ok := s.texts[in.GetId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "resource %s(%s/%s@undefined) doesn't exist", in.GetType(), in.GetNamespace(), in.GetId())
	}

	spec, err := proto.Marshal(&configpb.MachineConfigSpec{YamlMarshalled: []byte(text)})
	if err != nil {
		return nil, err
	}

	return &v1alpha1.GetResponse{Resource: &v1alpha1.Resource{
		Metadata: &v1alpha1.Metadata{Namespace: in.GetNamespace(), Type: in.GetType(), Id: in.GetId(), Version: "1", Phase: "running"},
		Spec:     &v1alpha1.Spec{ProtoSpec: spec},
	}}, nil
}

// connWith is a configured node's connection whose COSI state holds texts.
func connWith(node string, texts map[string]string) *Conn {
	cosi := state.WrapCore(cosiclient.NewAdapter(configStates{texts: texts}))

	return &Conn{Mode: ModeSecure, client: &client.Client{COSI: cosi}, target: Target{Node: node}}
}

// Review 2026-11-29, item 2: the persistent configuration (the one saved
// for the next boot) was read through COSI's typed resource, whose own
// parse error was dropped as a permanent answer: a staged configuration
// that does not parse read as "nothing staged". It is parsed as the active
// one is, and its failure names the node and the command that shows the
// text, without the parser's words (they quote the value: a secret).
func TestPersistentConfigThatDoesNotParseIsReportedWithoutItsValues(t *testing.T) {
	t.Parallel()

	const (
		node   = "10.5.0.7"
		secret = "hunter2"
	)

	active := string(testMachineConfig(t, "/dev/sda"))
	bad := "version: v1alpha1\nmachine:\n  type: worker\n  install: " + secret + "\ncluster:\n  id: x\n"

	nc, err := readNodeConfig(t.Context(), connWith(node, map[string]string{string(configres.ActiveID): active, string(configres.PersistentID): bad}))
	if err == nil {
		t.Fatalf("a persistent configuration that does not parse read as PersistentDigest %q", nc.PersistentDigest)
	}

	saysNodeConfig(t, err, node, "saved for its next boot", "persistent", secret)
}

// Review 2026-11-29, item 3: the configuration a node runs is not the
// user's input: its parse failure says which node's configuration failed,
// and what to look at (its text, its version), not "validate it".
func TestActiveConfigThatDoesNotParseNamesTheNode(t *testing.T) {
	t.Parallel()

	const (
		node   = "10.5.0.9"
		secret = "hunter2"
	)

	bad := "version: v1alpha1\nmachine:\n  type: worker\n  install: " + secret + "\ncluster:\n  id: x\n"

	_, err := readNodeConfig(t.Context(), connWith(node, map[string]string{string(configres.ActiveID): bad}))
	saysNodeConfig(t, err, node, "runs", "v1alpha1", secret)
}

// saysNodeConfig checks a node configuration's parse error: the node, which
// configuration (which, id), the commands that show the text and the
// version; not the value, nor advice meant for an input.
func saysNodeConfig(t *testing.T, err error, node, which, id, secret string) {
	t.Helper()

	if err == nil {
		t.Fatal("no error")
	}

	msg := err.Error()
	for _, want := range []string{
		"the machine configuration node " + node + " " + which + " does not parse",
		"talosctl get machineconfig " + id + " -n " + node + " -o yaml",
		"talosctl version -n " + node,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}

	for _, not := range []string{secret, "validate", "getMachineConfiguration", "machineConfiguration does not parse"} {
		if strings.Contains(msg, not) {
			t.Errorf("the error says %q: %s", not, msg)
		}
	}

	if classify(err) != failPermanent {
		t.Errorf("the error is retried (not permanent): %s", msg)
	}
}

// A text given to the provider that does not parse is named as the input.
func TestInputConfigThatDoesNotParseNamesTheInput(t *testing.T) {
	t.Parallel()

	_, err := ConfigDigest([]byte("version: v1alpha1\nmachine:\n  type: worker\n  install: hunter2\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "machineConfiguration does not parse") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("the error of an input that does not parse: %v", err)
	}
}

// A node that serves no persistent configuration (NotFound) is read with
// an empty PersistentDigest; one that serves the active text has its digest.
func TestPersistentConfigDigest(t *testing.T) {
	t.Parallel()

	active := string(testMachineConfig(t, "/dev/sda"))

	for _, tc := range []struct {
		what  string
		texts map[string]string
		want  func(nc *NodeConfig) string
	}{
		{"none", map[string]string{string(configres.ActiveID): active}, func(*NodeConfig) string { return "" }},
		{"the active text", map[string]string{string(configres.ActiveID): active, string(configres.PersistentID): active}, func(nc *NodeConfig) string { return nc.ActiveDigest }},
	} {
		nc, err := readNodeConfig(t.Context(), connWith("10.5.0.8", tc.texts))
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}

		if want := tc.want(nc); nc.PersistentDigest != want || nc.ActiveDigest == "" {
			t.Errorf("%s: PersistentDigest %q (active %q), want %q", tc.what, nc.PersistentDigest, nc.ActiveDigest, want)
		}
	}
}
