package talosconfig

import (
	"errors"
	"fmt"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"gopkg.in/yaml.v3"
)

// ComponentImages are the images of a control plane's Kubernetes
// components, as its machine configuration names them (Talos's defaults
// when a field is empty).
type ComponentImages struct {
	APIServer, ControllerManager, Scheduler, Proxy string
}

// ComponentsChange is what RetagComponents changed.
type ComponentsChange struct {
	// From is the kube-apiserver's version before ("" when its image has
	// no tag).
	From string
	// Paths are the changed configuration paths, in a fixed order.
	Paths []string
}

// RetagComponents sets the tag of the control plane component images
// (cluster.apiServer, controllerManager, scheduler and proxy) of a machine
// configuration to version, keeping each image's repository (a mirror or
// private registry stays) and everything else, the kubelet image included.
// It is the first phase of a Kubernetes upgrade, as `talosctl upgrade-k8s`
// patches only these image fields before it touches any kubelet
// (siderolabs/talos pkg/cluster/kubernetes/talos_managed.go,
// upgradeStaticPodPatcher and patchKubeProxy). A configuration whose
// components already run version comes back unchanged with no paths.
func RetagComponents(machineConfig []byte, version string) ([]byte, ComponentsChange, error) {
	if !strings.HasPrefix(version, "v") {
		version = "v" + version
	}

	if _, ok := ImageTagVersion("x:" + version); !ok {
		return nil, ComponentsChange{}, fmt.Errorf("kubernetesVersion %q is not a version like v1.35.2", version)
	}

	cur, err := ComponentImagesOf(machineConfig)
	if err != nil {
		return nil, ComponentsChange{}, err
	}

	_, from := splitImageRef(cur.APIServer)
	change := ComponentsChange{From: from}
	patch := map[string]any{}

	for _, c := range []struct{ key, image string }{
		{"apiServer", cur.APIServer}, {"controllerManager", cur.ControllerManager}, {"scheduler", cur.Scheduler}, {"proxy", cur.Proxy},
	} {
		repo, _ := splitImageRef(c.image)

		want := repo + ":" + version
		if want == c.image {
			continue
		}

		patch[c.key] = map[string]any{"image": want}
		change.Paths = append(change.Paths, "cluster."+c.key+".image")
	}

	if len(change.Paths) == 0 {
		return machineConfig, change, nil
	}

	text, err := yaml.Marshal(map[string]any{"cluster": patch})
	if err != nil {
		return nil, ComponentsChange{}, err
	}

	out, err := applyPatch(machineConfig, nil, string(text))
	if err != nil {
		return nil, ComponentsChange{}, fmt.Errorf("setting the control plane component images to %s: %w", version, err)
	}

	return out, change, nil
}

// ComponentImagesOf reads the control plane component images of a machine
// configuration.
func ComponentImagesOf(machineConfig []byte) (ComponentImages, error) {
	cfg, err := configloader.NewFromBytes(machineConfig)
	if err != nil {
		return ComponentImages{}, fmt.Errorf("the node's machine configuration does not load: %s", scrubDecodeError(err))
	}

	if cfg.Cluster() == nil || cfg.Machine() == nil {
		return ComponentImages{}, errors.New("the node's machine configuration has no cluster or machine section (not a v1alpha1 node configuration)")
	}

	if !cfg.Machine().Type().IsControlPlane() {
		return ComponentImages{}, fmt.Errorf("the node is a %s, not a control plane: only control planes run the Kubernetes control plane components", cfg.Machine().Type())
	}

	c := cfg.Cluster()

	return ComponentImages{
		APIServer:         c.APIServer().Image(),
		ControllerManager: c.ControllerManager().Image(),
		Scheduler:         c.Scheduler().Image(),
		Proxy:             c.Proxy().Image(),
	}, nil
}
