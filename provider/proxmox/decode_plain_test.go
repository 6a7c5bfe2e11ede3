package proxmox

import (
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework/decodetest"
)

// A VM's Diff decodes its state and inputs with framework.DecodePlain, which
// must give what infer gives.
func TestVMDecodesPlainlyAsInferDoes(t *testing.T) {
	t.Parallel()
	decodetest.Check[VirtualMachineArgs](t, 1000)
	decodetest.Check[VirtualMachineState](t, 1000)
	// Check decodes its new inputs with framework.DecodeInputs: no defaults
	decodetest.CheckNoDefaults[VirtualMachineArgs](t, 1000)
}

// Its Check's result is encoded by framework.EncodeChecked, which must give
// what infer gives.
func TestVMCheckEncodesAsInferDoes(t *testing.T) {
	t.Parallel()
	decodetest.CheckEncode[VirtualMachineArgs](t, 1000)
}
