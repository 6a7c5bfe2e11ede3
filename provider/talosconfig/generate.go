package talosconfig

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
)

// Role is the kind of node a configuration is for.
type Role string

// Node roles.
const (
	RoleControlPlane Role = "controlplane"
	RoleWorker       Role = "worker"
)

// Input describes one machine configuration.
type Input struct {
	// ClusterName names the cluster (Kubernetes and talosconfig context).
	ClusterName string
	// Endpoint is the Kubernetes API URL every node uses, for example
	// https://192.168.1.220:6443 (a VIP, a load balancer or the first
	// control plane's address).
	Endpoint string
	// Role selects a control plane or a worker configuration.
	Role Role
	// Secrets is the cluster's bundle (see NewSecrets, UnmarshalSecrets).
	Secrets *secrets.Bundle
	// TalosVersion is the Talos version the node runs; it sets the version
	// contract, which is never newer than the node.
	TalosVersion string
	// ContractVersion, when set, generates for an older contract than
	// TalosVersion (for example "v1.11" while a node is upgraded from 1.11 to
	// 1.12: the configuration must stay valid on both). Never newer.
	ContractVersion string
	// KubernetesVersion, without or with "v"; empty means the Talos line's
	// default (DefaultKubernetesVersion). Checked against the support matrix.
	KubernetesVersion string
	// InstallDisk is the disk Talos installs to (/dev/sda for scsi disks,
	// /dev/vda for virtio disks).
	InstallDisk string
	// InstallImage is the installer image, for example
	// factory.talos.dev/nocloud-installer/<schematic>:v1.12.5.
	InstallImage string
	// SANs are extra names and addresses for the API server and Talos API
	// certificates.
	SANs []string
	// Patches are applied in order. Each is a strategic merge patch (YAML,
	// one or more documents, including extra documents such as
	// HostnameConfig, Layer2VIPConfig or LinkConfig) or a JSON6902 patch
	// (a JSON or YAML list of operations; single-document configs only, so
	// not with a Talos 1.12 contract).
	Patches []string
	// PatchSources name the patches in errors, in the caller's terms
	// (the component input "workerPools[0].patches[1]"), one per patch;
	// "" or a missing entry says "patch i of n".
	PatchSources []string
	// Mode is the runtime mode to validate for; the zero value means Metal.
	Mode RuntimeMode
}

// Result is a generated configuration.
type Result struct {
	// Config is the machine configuration YAML. It holds secrets.
	Config string
	// Warnings are machinery's validation warnings.
	Warnings []string
	// KubernetesVersion is the version used (defaults resolved), without "v".
	KubernetesVersion string
}

// Generate builds a controlplane or worker configuration with machinery's
// generator, applies the patches and validates the result with machinery's
// validator. The output is deterministic for a given Input.
func Generate(in Input) (Result, error) {
	mode := in.Mode
	if mode.name == "" {
		mode = Metal
	}
	b, err := baseFor(in, mode)
	if err != nil {
		return Result{}, err
	}
	if final, warnings, ok := generateByDocuments(b, in.Patches, mode, in.TalosVersion); ok {
		return Result{Config: final, Warnings: warnings, KubernetesVersion: b.k8s}, nil
	}
	return generateSlow(in, b, mode)
}

// generateSlow patches and validates whole texts; it words every error
// (docsteps.go gives the same answers faster when nothing fails).
func generateSlow(in Input, b *base, mode RuntimeMode) (Result, error) {
	steps, err := applyPatches(bytes.Clone(b.yaml), b.config, in.Patches, in.PatchSources)
	if err != nil {
		return Result{}, fmt.Errorf("%s configuration: %w", in.Role, err)
	}
	final := steps[len(steps)-1]
	warnings, err := Validate(final, mode, in.TalosVersion)
	if err != nil {
		return Result{}, fmt.Errorf("%s configuration%s: %w", in.Role, blamePatch(steps, in.PatchSources, mode, in.TalosVersion), withHint(err))
	}
	return Result{Config: final, Warnings: warnings, KubernetesVersion: b.k8s}, nil
}

// base is machinery's configuration of one role before the patches,
// validated, with its parsed form (read only: patches work on a clone).
type base struct {
	yaml   []byte
	config config.Provider
	// docs are yaml's documents, for generateByDocuments (nil: it does
	// not answer for this base).
	docs []docText
	k8s  string
	err  error
}

// baseKey is what a base depends on. Nodes of one role share it: the
// differences between them are patches. The bundle is compared by identity
// (bundles are not changed once made); a kept key keeps its bundle alive,
// so no other bundle can take its address.
type baseKey struct {
	bundle                                                     *secrets.Bundle
	cluster, endpoint, role, talos, contract, k8s, disk, image string
	sans                                                       memo.Key // each SAN with its length: nil and [""] differ
	mode                                                       RuntimeMode
}

// bases keeps the bases of this process: a preview generates every node's
// configuration (twice for a new cluster: with a throwaway bundle, then
// the real one), and most nodes of a cluster share one.
var bases = struct {
	sync.Mutex
	m map[baseKey]*base
}{m: map[baseKey]*base{}}

func baseFor(in Input, mode RuntimeMode) (*base, error) {
	k := baseKey{bundle: in.Secrets, cluster: in.ClusterName, endpoint: in.Endpoint, role: string(in.Role),
		talos: in.TalosVersion, contract: in.ContractVersion, k8s: in.KubernetesVersion, disk: in.InstallDisk,
		image: in.InstallImage, sans: memo.KeyOf(in.SANs...), mode: mode}
	bases.Lock()
	b := bases.m[k]
	bases.Unlock()
	if b == nil {
		b = generateBase(in, mode)
		bases.Lock()
		if len(bases.m) >= 256 {
			bases.m = map[baseKey]*base{}
		}
		bases.m[k] = b
		bases.Unlock()
	}
	return b, b.err
}

func generateBase(in Input, mode RuntimeMode) *base {
	opts, k8s, err := generateOptions(in)
	if err != nil {
		return &base{err: err}
	}
	genInput, err := generate.NewInput(in.ClusterName, in.Endpoint, k8s, opts...)
	if err != nil {
		return &base{err: fmt.Errorf("preparing %s configuration: %w", in.Role, err)}
	}
	machineType := machine.TypeWorker
	if in.Role == RoleControlPlane {
		machineType = machine.TypeControlPlane
	}
	cfg, err := genInput.Config(machineType)
	if err != nil {
		return &base{err: fmt.Errorf("generating %s configuration: %w", in.Role, err)}
	}
	baseYAML, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return &base{err: fmt.Errorf("encoding %s configuration: %w", in.Role, err)}
	}
	// the first patch starts from this text parsed, as it would parse it;
	// Validate would parse it too: it validates this parse instead
	parsed, err := configloader.NewFromBytes(baseYAML)
	if err != nil {
		_, err = Validate(string(baseYAML), mode, in.TalosVersion) // words it
		return &base{err: fmt.Errorf("%s configuration before patches: %w", in.Role, err)}
	}
	if _, err := validateText(string(baseYAML), parsed, mode, in.TalosVersion); err != nil {
		return &base{err: fmt.Errorf("%s configuration before patches: %w", in.Role, err)}
	}
	return &base{yaml: baseYAML, config: parsed, docs: baseDocs(baseYAML, parsed), k8s: k8s}
}

func generateOptions(in Input) ([]generate.Option, string, error) {
	if strings.TrimSpace(in.ClusterName) == "" {
		return nil, "", fmt.Errorf("cluster name is empty")
	}
	if in.Role != RoleControlPlane && in.Role != RoleWorker {
		return nil, "", fmt.Errorf("role %q is not one of %q, %q", in.Role, RoleControlPlane, RoleWorker)
	}
	if err := checkEndpoint(in.Endpoint); err != nil {
		return nil, "", err
	}
	if in.Secrets == nil {
		return nil, "", fmt.Errorf("secrets bundle is missing: create one with MachineSecrets")
	}
	if err := in.Secrets.Validate(); err != nil {
		return nil, "", fmt.Errorf("secrets bundle is incomplete: %w", err)
	}
	contract, err := VersionContract(in.TalosVersion)
	if err != nil {
		return nil, "", err
	}
	if in.ContractVersion != "" {
		older, err := VersionContract(in.ContractVersion)
		if err != nil {
			return nil, "", fmt.Errorf("contract version: %w", err)
		}
		if older.Greater(contract) {
			return nil, "", fmt.Errorf("contract version %s is newer than Talos %s: the node would refuse the newer keys; "+
				"use a contract no newer than the version the node runs", older, in.TalosVersion)
		}
		contract = older
	}
	if err := checkImageAgainstContract(in.InstallImage, contract, in.TalosVersion); err != nil {
		return nil, "", err
	}
	k8s := in.KubernetesVersion
	if strings.TrimSpace(k8s) == "" {
		k8s, _ = DefaultKubernetesVersion(in.TalosVersion) //nolint:errcheck // checked by VersionContract
	} else if _, err := ParseRelease(k8s); err != nil {
		return nil, "", fmt.Errorf("kubernetes version: %w", err)
	}
	k8s, err = NormalizeKubernetesVersion(k8s)
	if err != nil {
		return nil, "", err
	}
	if err := CheckKubernetesVersion(in.TalosVersion, k8s); err != nil {
		return nil, "", err
	}
	if in.InstallDisk != "" && !strings.HasPrefix(in.InstallDisk, "/dev/") {
		return nil, "", fmt.Errorf("install disk %q is not a device path: use /dev/sda for a scsi disk or /dev/vda for a virtio disk", in.InstallDisk)
	}
	for i, san := range in.SANs {
		if strings.TrimSpace(san) == "" || strings.ContainsAny(san, " /:") && net.ParseIP(san) == nil {
			return nil, "", fmt.Errorf("SAN %d (%q) is neither a DNS name nor an IP address", i, san)
		}
	}
	opts := []generate.Option{
		generate.WithVersionContract(contract),
		generate.WithSecretsBundle(in.Secrets),
		generate.WithInstallDisk(in.InstallDisk),
		generate.WithInstallImage(in.InstallImage),
		generate.WithAdditionalSubjectAltNames(in.SANs),
	}
	return opts, k8s, nil
}

func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Path != "" && u.Path != "/" {
		return fmt.Errorf("endpoint %q is not a Kubernetes API URL: write it as https://<address or name>:6443", endpoint)
	}
	return nil
}

// applyPatches returns the configuration after each step: steps[0] is the
// base, steps[i] the result of patch i (1-based in messages).
// parsed, when not nil, is base parsed (read only).
func applyPatches(base []byte, parsed config.Provider, patches, sources []string) ([]string, error) {
	steps := []string{string(base)}
	current := base
	for i, text := range patches {
		next, err := applyPatch(current, parsed, text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", patchName(i, len(patches), sources), err)
		}
		current, parsed = next, nil
		steps = append(steps, string(next))
	}
	return steps, nil
}

// blamePatch names the first patch after which validation fails, so an
// error says which patch to fix.
func blamePatch(steps, sources []string, mode RuntimeMode, talosVersion string) string {
	if len(steps) == 1 {
		return ""
	}
	for i := 1; i < len(steps); i++ {
		if _, err := Validate(steps[i], mode, talosVersion); err != nil {
			return " after " + patchName(i-1, len(steps)-1, sources)
		}
	}
	return " after all patches"
}

// patchName is patch i (0-based) of n: its source when known, else
// "patch i+1 of n".
func patchName(i, n int, sources []string) string {
	if i < len(sources) && sources[i] != "" {
		return sources[i]
	}
	return fmt.Sprintf("patch %d of %d", i+1, n)
}

// withHint adds what to do for validation errors users commonly hit.
func withHint(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "static hostname is already set in v1alpha1 config"):
		return fmt.Errorf("%w (with a Talos 1.12 contract set the hostname with a HostnameConfig document: "+
			"apiVersion: v1alpha1, kind: HostnameConfig, auto: off, hostname: <name>; not machine.network.hostname)", err)
	case strings.Contains(msg, "HostnameConfig: 'auto' and 'hostname' cannot be set at the same time"):
		return fmt.Errorf("%w (the generated configuration sets auto: stable; add auto: off to the HostnameConfig patch)", err)
	default:
		return err
	}
}

// normalize re-encodes a configuration the way Generate outputs it.
func normalize(configYAML []byte) ([]byte, error) {
	cfg, err := configloader.NewFromBytes(configYAML)
	if err != nil {
		return nil, err
	}
	return cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
}
