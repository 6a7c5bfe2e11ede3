package talosconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"gopkg.in/yaml.v3"
)

// BootstrapManifestInputs are what a control plane's bootstrap manifests
// are rendered from, one readable line each, so that a change of any of
// them shows by name in a preview and makes the update sync the manifests
// as `talosctl upgrade-k8s` does. Talos itself only creates missing
// objects from them (siderolabs/talos v1.14.1 internal/app/machined/pkg/
// controllers/k8s/manifest_apply.go: an object that exists or is in the
// inventory is skipped), so a changed or removed manifest reaches the
// cluster only through such a sync.
//
// Lines (in the order Talos names the manifests, control_plane.go
// ControlPlaneExtraManifestsController): the external cloud provider's
// manifest URLs and extraManifests URLs as digests (a URL may be a secret
// input: a token in its query), their headers as a digest, inlineManifests by name with a digest of their contents
// (never the contents: they may hold secrets) and, after InlineObjectsMark,
// one of the objects a control plane renders from them, and one digest of the
// settings Talos renders kube-proxy, CoreDNS and the CNI from
// (cluster.proxy but its image, cluster.coreDNS, cluster.network). nil for
// a worker.
func BootstrapManifestInputs(cfg config.Provider) []string {
	if cfg == nil || cfg.Machine() == nil || !cfg.Machine().Type().IsControlPlane() {
		return nil
	}
	cl := cfg.Cluster()
	var out []string
	if cl.ExternalCloudProvider().Enabled() {
		for _, u := range cl.ExternalCloudProvider().ManifestURLs() {
			out = append(out, "externalCloudProvider "+digestOf(u))
		}
	}
	for _, u := range cl.ExtraManifestURLs() {
		out = append(out, "extraManifest "+digestOf(u))
	}
	if h := cl.ExtraManifestHeaderMap(); len(h) > 0 {
		out = append(out, "extraManifestHeaders "+digestOf(h))
	}
	for _, m := range cl.InlineManifests() {
		line := "inlineManifest " + m.Name() + " " + digestOf(m.Contents())
		// The objects as a control plane renders them: what the sync waits
		// for (an edit may change the text without changing the objects).
		if objs, err := ManifestObjects([]byte(m.Contents())); err == nil {
			line += InlineObjectsMark + ObjectsDigest(objs)
		}
		out = append(out, line)
	}
	if raw := cfg.RawV1Alpha1(); raw != nil && raw.ClusterConfig != nil {
		c := raw.ClusterConfig
		// kube-proxy's image moves with kubernetesVersion, which syncs by
		// itself: left out, so that an upgrade is not shown twice.
		var proxy any
		if c.ProxyConfig != nil {
			p := *c.ProxyConfig
			p.ContainerImage = ""
			proxy = p
		}
		out = append(out, "kube-proxy, CoreDNS and CNI settings "+digestOf([]any{proxy, c.CoreDNSConfig, c.ClusterNetwork}))
	}
	return out
}

// InlineObjectsMark starts the part of an inlineManifest line that is the
// digest of its rendered objects (ObjectsDigest). State written before it
// existed lacks it.
const InlineObjectsMark = " objects "

// digestOf is a short sha256 of v's YAML: enough to tell a change, too
// short to stand for the value.
func digestOf(v any) string {
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		b, _ = yaml.Marshal(v) //nolint:errcheck // config types always marshal
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}

// ManifestSyncPreview is what syncing the bootstrap manifests of a new
// configuration changes, compared with the configuration the control
// plane runs: the objects of inlineManifests by name, like the dry run of
// `talosctl upgrade-k8s` lists them (go-kubernetes v0.2.41
// kubernetes/ssa/diff.go: created, configured, pruned). Objects of
// extraManifests URLs and those Talos renders (kube-proxy, CoreDNS, CNI)
// are known only once the nodes fetch or render them: Notes says which of
// those change.
type ManifestSyncPreview struct {
	Create, Change, Prune []string // "ConfigMap default/app"
	Notes                 []string
}

// Empty is true when the sync changes nothing the preview can tell.
func (p ManifestSyncPreview) Empty() bool {
	return len(p.Create)+len(p.Change)+len(p.Prune)+len(p.Notes) == 0
}

func (p ManifestSyncPreview) String() string {
	var parts []string
	for _, s := range []struct {
		what string
		list []string
	}{{"creates", p.Create}, {"changes", p.Change}, {"prunes", p.Prune}} {
		if len(s.list) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", s.what, len(s.list), strings.Join(s.list, ", ")))
		}
	}
	parts = append(parts, p.Notes...)
	return strings.Join(parts, "; ")
}

// PreviewManifestSync compares the bootstrap manifest inputs of running
// (the control plane's configuration now) and next. An inline manifest
// that does not parse is an error naming it: Talos would fail to render it.
func PreviewManifestSync(running, next config.Provider) (ManifestSyncPreview, error) {
	var p ManifestSyncPreview
	if running == nil || next == nil {
		return p, nil
	}
	oldObjs, err := inlineObjects(running)
	if err != nil {
		return p, fmt.Errorf("the running configuration: %w", err)
	}
	newObjs, err := inlineObjects(next)
	if err != nil {
		return p, err
	}
	for _, o := range newObjs.order {
		before, ok := oldObjs.byKey[o]
		switch {
		case !ok:
			p.Create = append(p.Create, o)
		case !reflect.DeepEqual(before, newObjs.byKey[o]):
			p.Change = append(p.Change, o)
		}
	}
	for _, o := range oldObjs.order {
		if _, ok := newObjs.byKey[o]; !ok {
			p.Prune = append(p.Prune, o)
		}
	}

	// What the preview cannot list: lines other than inline manifests,
	// URLs named again (the caller scrubs secret ones).
	urls := map[string]string{}
	for _, c := range []config.Provider{running, next} {
		for _, u := range append(c.Cluster().ExtraManifestURLs(), c.Cluster().ExternalCloudProvider().ManifestURLs()...) {
			urls[digestOf(u)] = u
		}
	}
	name := func(l string) string {
		d := strings.SplitN(l, " ", 2)[1]
		if u, ok := urls[d]; ok {
			return u
		}
		return d
	}
	was := map[string]bool{}
	for _, l := range BootstrapManifestInputs(running) {
		was[l] = true
	}
	is := map[string]bool{}
	for _, l := range BootstrapManifestInputs(next) {
		is[l] = true
		switch {
		case was[l] || strings.HasPrefix(l, "inlineManifest "):
		case strings.HasPrefix(l, "kube-proxy, CoreDNS and CNI settings "):
			p.Notes = append(p.Notes, "kube-proxy, CoreDNS and CNI objects as the nodes render them from the new settings")
		case strings.HasPrefix(l, "extraManifestHeaders "):
			p.Notes = append(p.Notes, "extraManifests fetched with new headers")
		default:
			p.Notes = append(p.Notes, "the objects of "+name(l)+" (known once the nodes fetch it)")
		}
	}
	for _, l := range BootstrapManifestInputs(running) {
		if !is[l] && (strings.HasPrefix(l, "extraManifest ") || strings.HasPrefix(l, "externalCloudProvider ")) {
			p.Notes = append(p.Notes, "prunes the objects of "+name(l)+" that no other manifest holds")
		}
	}
	return p, nil
}

type objectSet struct {
	order []string
	byKey map[string]any
}

// inlineObjects are the objects of cfg's inline manifests by "Kind
// namespace/name" (a namespaced object without a namespace is in
// "default", where the sync applies it), in manifest order.
func inlineObjects(cfg config.Provider) (objectSet, error) {
	s := objectSet{byKey: map[string]any{}}
	for _, m := range cfg.Cluster().InlineManifests() {
		dec := yaml.NewDecoder(strings.NewReader(m.Contents()))
		for {
			var o map[string]any
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return s, fmt.Errorf("inline manifest %q does not parse as YAML: %w", m.Name(), err)
			}
			if len(o) == 0 {
				continue
			}
			key, err := subjectOf(o)
			if err != nil {
				return s, fmt.Errorf("inline manifest %q: %w", m.Name(), err)
			}
			if _, dup := s.byKey[key]; !dup {
				s.order = append(s.order, key)
			}
			s.byKey[key] = o
		}
	}
	return s, nil
}

func subjectOf(o map[string]any) (string, error) {
	kind, _ := o["kind"].(string)
	meta, _ := o["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if kind == "" || name == "" {
		var b bytes.Buffer
		_ = yaml.NewEncoder(&b).Encode(map[string]any{"kind": o["kind"], "apiVersion": o["apiVersion"]})
		return "", fmt.Errorf("an object without kind or metadata.name (%s)", strings.TrimSpace(b.String()))
	}
	if ns, _ := meta["namespace"].(string); ns != "" {
		return kind + " " + ns + "/" + name, nil
	}
	if clusterScoped[kind] {
		return kind + " " + name, nil
	}
	return kind + " default/" + name, nil
}

// clusterScoped are the common kinds without a namespace; others without
// one are shown in "default", as the sync places namespaced objects.
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"StorageClass": true, "PriorityClass": true, "PersistentVolume": true, "IngressClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "APIService": true,
	"CSIDriver": true, "RuntimeClass": true, "Node": true,
}
