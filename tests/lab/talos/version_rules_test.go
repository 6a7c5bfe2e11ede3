package talos

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

const (
	isoURL111    = "https://factory.talos.dev/image/" + qgaID + "/v1.11.5/nocloud-amd64.iso"
	installer111 = "factory.talos.dev/nocloud-installer/" + qgaID + ":v1.11.5"
)

// contract111 generates for a node that runs v1.11.5 and installs it.
func contract111(t *testing.T) generate.Option {
	t.Helper()

	c, err := config.ParseContractFromVersion("v1.11.5")
	if err != nil {
		t.Fatal(err)
	}

	return func(o *generate.Options) error {
		if err := generate.WithVersionContract(c)(o); err != nil {
			return err
		}

		return generate.WithInstallImage(installer111)(o)
	}
}

// A node booted from a v1.11 ISO decodes configs with the v1.11 decoder:
// a 1.12 config (grubUseUKICmdline, HostnameConfig) does not parse, and
// Kubernetes is checked against Talos 1.11's support matrix (1.29 .. 1.34).
func TestOlderNodeRefusesNewerConfigAndKubernetes(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	ip := addressBlock()
	v := newVM("cp1", ip(11), "scsi0")
	v.m.CDROM = isoURL111
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	c := maintenanceClient(t, v.addr())
	ctx := ctxT(t)
	apply := func(cfg []byte) error {
		_, err := c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: cfg, Mode: machine.ApplyConfigurationRequest_AUTO})

		return err
	}

	// A 1.12 contract: its v1alpha1 document comes first and has a key 1.11 lacks.
	err := apply(configBytes(t, clusterInputK8s(t, v.addr(), "1.34.1"), mtype.TypeControlPlane))
	mustContain(t, err, "failed to parse config: unknown keys found during decoding:\nmachine:\n    install:\n        grubUseUKICmdline: true\n")

	// A 1.11 contract plus a 1.12 document.
	in111 := clusterInputK8s(t, v.addr(), "1.34.1", contract111(t))
	err = apply(configBytes(t, in111, mtype.TypeControlPlane, func(s string) string {
		return s + "---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: cp1\n"
	}))
	mustContain(t, err, `failed to parse config: "HostnameConfig" "v1alpha1": not registered`)

	// Kubernetes 1.35 is too new for Talos 1.11 (machinery 1.12 alone would take it).
	err = apply(configBytes(t, clusterInputK8s(t, v.addr(), "1.35.2", contract111(t)), mtype.TypeControlPlane))
	wantCode(t, err, codes.InvalidArgument, "runtime configuration validation failed")
	mustContain(t, err, "kubelet image is not valid: version of Kubernetes 1.35.2 is too new to be used with Talos 1.11.5")
	mustContain(t, err, "kube-apiserver image is not valid: version of Kubernetes 1.35.2 is too new to be used with Talos 1.11.5")

	if n.Status().Configured || n.Status().Phase != PhaseMaintenance {
		t.Fatalf("refused configs must leave the node in maintenance, got %+v", n.Status())
	}

	// Kubernetes 1.29 is supported by Talos 1.11 (not by 1.12): accepted.
	if err := apply(configBytes(t, clusterInputK8s(t, v.addr(), "1.29.3", contract111(t)), mtype.TypeControlPlane)); err != nil {
		t.Fatalf("a 1.11 config with Kubernetes 1.29 on a 1.11 node: %v", err)
	}

	waitFor(t, "configured", func() bool { st := n.Status(); return st.Phase == PhaseRunning && st.Configured })

	// Configured: the same rules hold for ApplyConfiguration over mTLS.
	sc := secureClient(t, adminTalosconfig(t, in111), v.addr())
	waitFor(t, "apid", func() bool { _, err := sc.Version(ctx); return err == nil })

	_, err = sc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
		Data: configBytes(t, clusterInputK8s(t, v.addr(), "1.29.3", contract111(t)), mtype.TypeControlPlane, func(s string) string {
			return strings.Replace(s, "install:\n", "install:\n        grubUseUKICmdline: true\n", 1)
		}),
		Mode: machine.ApplyConfigurationRequest_AUTO,
	})
	wantCode(t, err, codes.InvalidArgument, "unknown keys found during decoding:\nmachine:\n    install:\n        grubUseUKICmdline: true\n")
}

// On a 1.12 node the same 1.29 config is refused by 1.12's own matrix.
func TestKubernetesCheckedAgainstTheNodesTalos(t *testing.T) {
	t.Parallel()

	in := clusterInputK8s(t, netipPrefix("127.0.0.1/32").Addr(), "1.29.3", contract111(t))
	cfg, err := in.Config(mtype.TypeControlPlane)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ running, want string }{
		{"v1.11.5", ""},
		{"v1.12.5", "v1alpha1.Config: 4 errors occurred:\n\t* kubelet image is not valid: version of Kubernetes 1.29.3 is too old to be used with Talos 1.12.5"},
		{"v1.10.6", ""},
		{"v1.8.0", ""},
		{"v1.13.0", "kubelet image is not valid: version of Kubernetes 1.29.3 is too old to be used with Talos 1.13.0"},
		{"v1.14.1", "kube-scheduler image is not valid: version of Kubernetes 1.29.3 is too old to be used with Talos 1.14.1"},
		{"v1.15.0", "kube-scheduler image is not valid: compatibility with version 1.15.0 is not supported"},
	} {
		err := kubernetesCheckedFor(tc.running, cfg, nil)
		if tc.want == "" && err != nil {
			t.Errorf("%s: %v", tc.running, err)
		}

		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.running, err, tc.want)
		}
	}
}

// The summary keeps the unknown values as written (xyaml marshals their
// yaml.Node), so flow style and quotes survive.
func TestCheckConfigKnown(t *testing.T) {
	t.Parallel()

	const kubespan = "version: v1alpha1\nmachine:\n  network:\n    kubespan:\n      filters:\n        excludeAdvertisedNetworks: [10.0.0.0/8]\n        endpoints: [0.0.0.0/0]\n"

	const bonds = "version: v1alpha1\nmachine:\n  network:\n    interfaces:\n      - interface: eth0\n      - interface: bond0\n        bond:\n          deviceSelectors:\n            - hardwareAddr: 'aa:*'\n            - permanentAddr: 'bb:*'\n"

	for _, tc := range []struct {
		name, running, cfg, want string
	}{
		{"field added in a patch release", "v1.12.3", kubespan,
			"error decoding document /v1alpha1/ (line 1): unknown keys found during decoding:\nmachine:\n    network:\n        kubespan:\n            filters:\n                excludeAdvertisedNetworks: [10.0.0.0/8]\n"},
		{"field known from that patch", "v1.12.4", kubespan, ""},
		{"unwrapped before v1.12.3", "v1.12.2", kubespan, "unknown keys found during decoding:\nmachine:"},
		{"only the list elements holding the key", "v1.8.3", bonds,
			"unknown keys found during decoding:\nmachine:\n    network:\n        interfaces:\n            - bond:\n                deviceSelectors:\n                    - permanentAddr: 'bb:*'\n"},
		{"list field known", "v1.9.0", bonds, ""},
		{"document newer than the node", "v1.10.6", "apiVersion: v1alpha1\nkind: RawVolumeConfig\nname: data\n", `"RawVolumeConfig" "v1alpha1": not registered`},
		{"document known", "v1.11.0", "apiVersion: v1alpha1\nkind: RawVolumeConfig\nname: data\n", ""},
		{"second document", "v1.11.5", "version: v1alpha1\n---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 10.0.0.5\nlink: eth0\n", `"Layer2VIPConfig" "v1alpha1": not registered`},
		// Talos 1.13 and 1.14 documents on the releases before them, with v1.12.3+'s wrapping.
		{"1.13 document on 1.12", "v1.12.7", "apiVersion: v1alpha1\nkind: KubeSpanConfig\n",
			`error decoding document v1alpha1/KubeSpanConfig/ (line 1): "KubeSpanConfig" "v1alpha1": not registered`},
		{"1.13 document on 1.13", "v1.13.8", "apiVersion: v1alpha1\nkind: KubeSpanConfig\n", ""},
		{"1.14 document on 1.13", "v1.13.8", "apiVersion: v1alpha1\nkind: KubeletConfig\n",
			`error decoding document v1alpha1/KubeletConfig/ (line 1): "KubeletConfig" "v1alpha1": not registered`},
		{"1.14 install document on 1.13", "v1.13.0", "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\n",
			`error decoding document v1alpha1/UnattendedInstallConfig/ (line 1): "UnattendedInstallConfig" "v1alpha1": not registered`},
		{"1.14 document on 1.14", "v1.14.1", "apiVersion: v1alpha1\nkind: KubeletConfig\n", ""},
		{"release older than the tables", "v1.7.6", "version: v1alpha1\n", "simulator: the config decoder of Talos v1.7.6 (older than v1.8.0) is not modelled"},
		{"malformed YAML is left to machinery", "v1.11.5", "machine: [\n", ""},
	} {
		err := checkConfigKnown([]byte(tc.cfg), tc.running)

		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: unexpected %v", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: accepted, want %q", tc.name, tc.want)
		case tc.want != "" && !strings.HasPrefix(err.Error(), tc.want):
			t.Errorf("%s: error\n%q\nwant prefix\n%q", tc.name, err, tc.want)
		}
	}
}
