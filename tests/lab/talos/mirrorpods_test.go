package talos

import (
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// A control plane's static pods follow its configuration: a new
// kube-apiserver image (the first step of a Kubernetes upgrade) replaces
// the mirror pod, which then shows the new image, as the kubelet replaces a
// changed static pod's mirror pod (pkg/kubelet/pod/mirror_client.go).
func TestMirrorPodFollowsStaticPodImage(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})
	tc.bootstrap(t)

	k := newKubectl(t, tc.kubeconfig(t))
	k.eventually(`registry.k8s.io/kube-apiserver:v1.35.2`, "get", "pod", "-n", "kube-system", "kube-apiserver-cp1", "-o", "jsonpath={.spec.containers[0].image}")

	next := configBytes(t, tc.in, mtype.TypeControlPlane, replaceOnce("image: registry.k8s.io/kube-apiserver:v1.35.2", "image: registry.k8s.io/kube-apiserver:v1.35.3"))
	if _, err := tc.client(t, tc.cps[0]).ApplyConfiguration(ctxT(t), &machine.ApplyConfigurationRequest{Data: next, Mode: machine.ApplyConfigurationRequest_NO_REBOOT}); err != nil {
		t.Fatal(err)
	}

	k.eventually(`registry.k8s.io/kube-apiserver:v1.35.3`, "get", "pod", "-n", "kube-system", "kube-apiserver-cp1", "-o", "jsonpath={.spec.containers[0].image}")
}
