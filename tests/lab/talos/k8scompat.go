package talos

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/hashicorp/go-multierror"
	"github.com/siderolabs/talos/pkg/machinery/config"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosrelease"
)

// RuntimeValidate checks each Kubernetes image tag against the Talos that
// runs it (v1alpha1_validation.go ValidateKubernetesImageTag reads the
// running version from pkg/machinery/version). In the lab that version is
// machinery's own (v1.13.9) for every node, so kubernetesCheckedFor takes
// those results out of err and puts in the same checks made with the
// node's version: Kubernetes 1.35 is refused on a v1.11 node
// ("version of Kubernetes 1.35.2 is too new to be used with Talos 1.11.5").
func kubernetesCheckedFor(running string, cfg config.Provider, err error) error {
	var v1Errs, others []error

	var all *multierror.Error
	if errors.As(err, &all) {
		for i, e := range all.Errors {
			var inner *multierror.Error
			if i == 0 && strings.HasPrefix(e.Error(), v1alpha1Prefix) && errors.As(e, &inner) {
				v1Errs = append(v1Errs, inner.Errors...)
			} else {
				others = append(others, e)
			}
		}
	} else if err != nil {
		return err // not the container's shape: leave it as machinery said it
	}

	v1Errs = slices.DeleteFunc(v1Errs, isImageTagError)
	v1Errs = append(v1Errs, imageTagErrors(running, cfg)...)

	var out *multierror.Error

	if len(v1Errs) > 0 {
		out = multierror.Append(out, fmt.Errorf("v1alpha1.Config: %w", multierror.Append(nil, v1Errs...)))
	}

	out = multierror.Append(out, others...)

	return out.ErrorOrNil()
}

// v1alpha1Prefix: container.RuntimeValidate wraps the v1alpha1 errors so.
const v1alpha1Prefix = "v1alpha1.Config: "

var imageTagComponents = []string{"kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

func isImageTagError(e error) bool {
	for _, c := range imageTagComponents {
		if strings.HasPrefix(e.Error(), c+" image is not valid: ") {
			return true
		}
	}

	return false
}

// imageTagErrors are v1alpha1 RuntimeValidate's image checks, made with
// the node's Talos version: the kubelet always, the control plane
// components on control planes.
func imageTagErrors(running string, cfg config.Provider) []error {
	raw := cfg.RawV1Alpha1()
	if raw == nil || raw.MachineConfig == nil {
		return nil
	}

	images := []string{raw.Machine().Kubelet().Image()}

	if raw.ClusterConfig != nil && raw.Machine().Type().IsControlPlane() {
		images = append(images, raw.Cluster().APIServer().Image(), raw.Cluster().ControllerManager().Image(), raw.Cluster().Scheduler().Image())
	}

	var errs []error

	for i, ref := range images {
		if err := kubernetesSupportedOn(running, ref); err != nil {
			errs = append(errs, fmt.Errorf("%s image is not valid: %w", imageTagComponents[i], err))
		}
	}

	return errs
}

// kubernetesSupportedOn is ValidateKubernetesImageTag with the node's
// Talos version in place of the process's, over talosrelease's rules
// (machinery's compatibility packages, and the Talos 1.14 row read from its
// v1.14.1 tag, which the pinned machinery v1.13.9 does not know).
func kubernetesSupportedOn(running, imageRef string) error {
	talos, err := semver.ParseTolerant(running)
	if err != nil {
		return fmt.Errorf("failed to parse Talos version: %w", err)
	}

	return talosrelease.KubernetesImageSupported(talos, imageRef)
}
