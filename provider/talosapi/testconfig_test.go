package talosapi

import (
	"sync"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// One secrets bundle for all tests: generating one costs seconds (RSA keys).
var (
	bundleOnce sync.Once
	bundle     *secrets.Bundle
	bundleErr  error
)

// testMachineConfig generates a real control plane configuration with
// machinery, for tests that need one (not the project's generator: that is
// talosconfig's, and these tests are about talking to nodes).
func testMachineConfig(t *testing.T, installDisk string) []byte {
	t.Helper()

	contract := config.TalosVersion1_12

	bundleOnce.Do(func() { bundle, bundleErr = secrets.NewBundle(secrets.NewFixedClock(fixedTime), contract) })

	if bundleErr != nil {
		t.Fatal(bundleErr)
	}

	in, err := generate.NewInput("test", "https://127.0.0.1:6443", "1.34.1",
		generate.WithSecretsBundle(bundle), generate.WithVersionContract(contract), generate.WithInstallDisk(installDisk))
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := in.Config(machine.TypeControlPlane)
	if err != nil {
		t.Fatal(err)
	}

	b, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsAll))
	if err != nil {
		t.Fatal(err)
	}

	return b
}
