package talos

import (
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework/decodetest"
)

// The Diffs of ConfigurationApply, MachineSecrets and Kubeconfig decode their
// state and inputs with framework.DecodePlain, which must give what infer
// gives.
func TestDiffsDecodePlainlyAsInferDoes(t *testing.T) {
	t.Parallel()
	decodetest.Check[ConfigurationApplyArgs](t, 1000)
	decodetest.Check[ConfigurationApplyState](t, 1000)
	decodetest.Check[MachineSecretsArgs](t, 1000)
	decodetest.Check[MachineSecretsState](t, 1000)
	decodetest.Check[KubeconfigArgs](t, 1000)
	decodetest.Check[KubeconfigState](t, 1000)
	// ConfigurationApply's Check decodes its new inputs with
	// framework.DecodeInputs: no defaults
	decodetest.CheckNoDefaults[ConfigurationApplyArgs](t, 1000)
}

// Their Checks' results are encoded by framework.EncodeChecked, which must
// give what infer gives.
func TestChecksEncodeAsInferDoes(t *testing.T) {
	t.Parallel()
	decodetest.CheckEncode[ConfigurationApplyArgs](t, 1000)
	decodetest.CheckEncode[MachineSecretsArgs](t, 1000)
	decodetest.CheckEncode[KubeconfigArgs](t, 1000)
}
