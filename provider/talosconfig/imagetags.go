package talosconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-multierror"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/compatibility"
	"github.com/siderolabs/talos/pkg/machinery/config"
)

// machinery's validator checks each Kubernetes image tag against the Talos
// version machinery itself is (compatibility.ValidateKubernetesImageTag
// reads pkg/machinery/version): with machinery v1.14.1 a Talos 1.12 node's
// configuration with Kubernetes 1.31, which that node runs, would fail as
// "too old to be used with Talos 1.14.1". A node checks with its own
// version, so these checks are redone here with the node's.

// imageTagComponents are the prefixes machinery gives those errors
// (config/types/k8s: kubelet.go, apiserver.go, controller_manager.go,
// scheduler.go, proxy.go at v1.14.1).
var imageTagComponents = []string{"kubelet", "kube-apiserver", "kube-controller-manager", "scheduler", "kube-scheduler", "proxy"}

func isImageTagError(e error) bool {
	for _, c := range imageTagComponents {
		if strings.HasPrefix(e.Error(), c+" image is not valid: ") {
			return true
		}
	}
	return false
}

// withoutImageTagErrors removes machinery's image tag errors from err,
// keeping its shape ("v1alpha1.Config: " and the other documents' errors).
func withoutImageTagErrors(err error) error {
	var all *multierror.Error
	if !errors.As(err, &all) {
		return err
	}
	var out *multierror.Error
	for _, e := range all.Errors {
		var inner *multierror.Error
		if errors.As(e, &inner) {
			prefix, _, _ := strings.Cut(e.Error(), inner.Error())
			kept := slices.DeleteFunc(slices.Clone(inner.Errors), isImageTagError)
			if len(kept) > 0 {
				out = multierror.Append(out, fmt.Errorf("%s%w", prefix, multierror.Append(nil, kept...)))
			}
			continue
		}
		if !isImageTagError(e) {
			out = multierror.Append(out, e)
		}
	}
	return out.ErrorOrNil()
}

// imageTagErrorsFor checks the kubelet's (and on a control plane the
// control plane components') Kubernetes version against Talos talosVersion.
func imageTagErrorsFor(cfg config.Provider, talosVersion string) []error {
	talos, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: talosVersion})
	if err != nil {
		return []error{fmt.Errorf("talos version %s: %w", talosVersion, err)}
	}
	type image struct{ component, ref string }
	var images []image
	if k := cfg.K8sKubeletConfig(); k != nil {
		images = append(images, image{"kubelet", k.Image()})
	}
	if cfg.Machine() != nil && cfg.Machine().Type().IsControlPlane() {
		if a := cfg.K8sAPIServerConfig(); a != nil {
			images = append(images, image{"kube-apiserver", a.Image()})
		}
		if c := cfg.K8sControllerManagerConfig(); c != nil {
			images = append(images, image{"kube-controller-manager", c.Image()})
		}
		if s := cfg.K8sSchedulerConfig(); s != nil {
			images = append(images, image{"kube-scheduler", s.Image()})
		}
	}
	var errs []error
	for _, im := range images {
		if im.ref == "" {
			continue
		}
		k8s, err := compatibility.KubernetesVersionFromImageRef(im.ref)
		if err == nil {
			err = k8s.SupportedWith(talos)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s image is not valid: %w", im.component, err))
		}
	}
	return errs
}
