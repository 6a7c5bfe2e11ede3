package talos

import "github.com/proxmoxtalos/proxmoxtalos/provider/framework"

// StateCopies lists the inputs that the per-node resources' states do not
// keep (framework.InputsOnly): every operation gets them from the inputs the
// engine sends, and a copy in each node's state cost about 1.8 KB of
// ciphertext per resource, written and read by the CLI at every step.
//
// clientConfiguration (ConfigurationApply, ControlPlaneComponents): the same
// for every node of a cluster; Diff compares it between old and new inputs,
// Update, Read and Delete reach the node with it from the inputs. The
// TalosCluster component used the apply's copy to tell its nodes from another
// cluster's; it reads the node's configuration's CA instead
// (cluster/members.go).
//
// Kept, although copies of an input as long as nothing drifts:
//   - ConfigurationApply's machineConfiguration: a refresh replaces it with
//     what the node runs (Read), Diff's note compares what the node runs with
//     the new inputs, Delete names the node and tells a control plane from
//     it, and an offline preview of TalosCluster reads each node's running
//     configuration from it (cluster/offline.go: the engine's
//     readStackResourceOutputs hands a program outputs only, never inputs).
//   - configView: the old side of the preview's path-by-path diff, which the
//     engine's display takes from the state (an output diff).
func StateCopies() framework.InputsOnly {
	return framework.InputsOnly{
		"proxmoxtalos:talos:ConfigurationApply":     {"clientConfiguration"},
		"proxmoxtalos:talos:ControlPlaneComponents": {"clientConfiguration"},
	}
}
