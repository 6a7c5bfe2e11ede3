package talosapi

import (
	"context"
	"strings"
	"testing"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// versionOnly answers Version as apid proxies it; nothing else is served.
type versionOnly struct {
	machineapi.MachineServiceClient
}

func (versionOnly) Version(context.Context, *emptypb.Empty, ...grpc.CallOption) (*machineapi.VersionResponse, error) {
	return &machineapi.VersionResponse{Messages: []*machineapi.Version{{Version: &machineapi.VersionInfo{Tag: "v1.12.5"}}}}, nil
}

// An error read through another node names the node read once: the parse
// error of its configuration names it already. Before, it said "node X
// through Y: the machine configuration node X runs does not parse".
func TestReadThroughNamesTheNodeOnce(t *testing.T) {
	t.Parallel()

	const (
		via, node = "10.5.0.2", "10.5.0.10"
		secret    = "hunter2"
	)

	bad := "version: v1alpha1\nmachine:\n  type: worker\n  install: " + secret + "\ncluster:\n  id: x\n"
	for name, texts := range map[string]map[string]string{
		"does not parse": {string(configres.ActiveID): bad},
		"not found":      {},
	} {
		conn := connWith(via, texts)
		conn.client.MachineClient = versionOnly{}

		_, _, err := ReadActiveConfigThrough(t.Context(), conn, node, fastOptions())
		if err == nil {
			t.Fatalf("%s: no error", name)
		}

		if n := strings.Count(err.Error(), "node "+node); n != 1 {
			t.Errorf("%s: the error names node %s %d times, want once: %v", name, node, n, err)
		}

		if !strings.Contains(err.Error(), via) || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error does not name the node read through (%s), or quotes the configuration: %v", name, via, err)
		}
	}
}
