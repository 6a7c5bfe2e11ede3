// Package config is the provider configuration of proxmoxtalos: how to reach
// the Proxmox VE API, the connected client every resource uses, and the
// provider configuration's own Diff (rotating the token or rewriting the endpoint in
// an equivalent form changes nothing; no change ever replaces the provider).
package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	"github.com/proxmoxtalos/proxmoxtalos/provider/version"
)

// Environment variables read when a setting is not in the configuration.
// The first three are the names bpg/terraform-provider-proxmox users know.
const (
	EnvEndpoint       = "PROXMOX_VE_ENDPOINT"
	EnvAPIToken       = "PROXMOX_VE_API_TOKEN"
	EnvInsecure       = "PROXMOX_VE_INSECURE"
	EnvCACert         = "PROXMOX_VE_CA_CERT"
	EnvRequestTimeout = "PROXMOX_VE_REQUEST_TIMEOUT"
	// EnvOfflinePreview is this provider's own: see OfflinePreview.
	EnvOfflinePreview = "PROXMOXTALOS_OFFLINE_PREVIEW"
	// EnvFullPreviewOutputs is this provider's own: see FullPreviewOutputs.
	EnvFullPreviewOutputs = "PROXMOXTALOS_FULL_PREVIEW_OUTPUTS"
	// EnvVMWatchScale is this provider's own and only an environment
	// variable (not a stack setting): see Settings.VMWatchScale.
	EnvVMWatchScale = "PROXMOXTALOS_VM_WATCH_SCALE"
)

// The range PROXMOXTALOS_VM_WATCH_SCALE accepts.
const minWatchScale, maxWatchScale = 0.01, 10.0

// Config is the provider configuration.
type Config struct {
	Endpoint       string  `pulumi:"endpoint,optional"`
	APIToken       string  `pulumi:"apiToken,optional" provider:"secret"`
	Insecure       *bool   `pulumi:"insecure,optional"`
	CACert         *string `pulumi:"caCert,optional"`
	RequestTimeout *int    `pulumi:"requestTimeout,optional"`
	OfflinePreview *bool   `pulumi:"offlinePreview,optional"`

	FullPreviewOutputs *bool `pulumi:"fullPreviewOutputs,optional"`

	// client is connected by Configure, once per provider process.
	client *pve.Client
	// watchScale is Settings.VMWatchScale, set by Configure.
	watchScale float64
}

// Annotate documents the configuration in the schema.
func (c *Config) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "How to reach the Proxmox VE API. Every setting may instead come from an environment variable.")
		a.Describe(&c.Endpoint, "The Proxmox VE API address, for example `https://pve.example.com:8006`. "+
			"`/api2/json` and a trailing slash are optional; all these forms are equivalent. "+
			"Environment variable: `"+EnvEndpoint+"`.")
		a.Describe(&c.APIToken, "An API token, `USER@REALM!TOKENID=SECRET` (for example `root@pam!pulumi=xxxxxxxx-...`). "+
			"Secret. Rotating it changes no resource. Environment variable: `"+EnvAPIToken+"`.")
		a.Describe(&c.Insecure, "Skip verification of the API's TLS certificate. Default `false`: the certificate is "+
			"verified against the system roots and `caCert`. Use only for test hosts. Environment variable: `"+EnvInsecure+"`.")
		a.Describe(&c.CACert, "PEM text of the CA certificate that signed the Proxmox VE host certificate (for a "+
			"self-signed cluster: the content of `/etc/pve/pve-root-ca.pem`). Environment variable: `"+EnvCACert+"`.")
		a.Describe(&c.RequestTimeout, "Timeout of one HTTP request to the API, in seconds. Default 60. Long operations "+
			"(tasks, waits) are bounded by each resource's own timeouts instead. Environment variable: `"+EnvRequestTimeout+"`.")
		a.Describe(&c.OfflinePreview, "Plan previews from the stack's state and the program's inputs without contacting "+
			"Proxmox VE or the Talos nodes, for CI runners that cannot reach them. The preview says, in one warning per "+
			"check, what it did not check (privileges, inputs against the Proxmox cluster, drift, host capacity, what the "+
			"nodes run); `pulumi up`, `destroy` and `refresh` are refused while it is on. Default `false`. Environment "+
			"variable: `"+EnvOfflinePreview+"`.")
		a.Describe(&c.FullPreviewOutputs, "Keep every output of a TalosCluster's child resources in previews. By default "+
			"the preview of such a child's create (a VM, a node's ConfigurationApply...) returns as outputs only what "+
			"the create computes, not copies of its inputs, which keeps previews of large new clusters fast; policy "+
			"packs' `validateStack` and Automation API engine events then see those inputs among the child's outputs "+
			"only at `pulumi up` (`validateResource` sees them in previews too). Set it "+
			"`true` for a policy pack that checks them in previews. Changes no resource. Default `false`. "+
			"Environment variable: `"+EnvFullPreviewOutputs+"`.")
	})
}

// Settings are the effective settings: configuration, else environment, else default.
type Settings struct {
	Endpoint       string
	APIToken       string
	Insecure       bool
	CACert         string
	RequestTimeout time.Duration
	OfflinePreview bool
	// FullPreviewOutputs keeps the echoed inputs of a TalosCluster's
	// children in previews (framework.PreviewEchoes).
	FullPreviewOutputs bool
	// VMWatchScale multiplies the windows in which the waits on Talos
	// nodes do not ask Proxmox about a silent node's VM, because the
	// provider itself made the node silent (an install, an upgrade, a
	// reboot, a VM start: vmwatch.Policy.Scale). Default 1. For labs whose
	// machines install and boot much faster than real ones (the e2e tests
	// set it), or above 1 for slow machines or registries.
	VMWatchScale float64
}

// Resolve applies the environment fallbacks and defaults, and validates
// formats without contacting the server. Its errors never contain the token.
func (c *Config) Resolve(getenv func(string) string) (Settings, error) {
	s := Settings{Endpoint: c.Endpoint, APIToken: c.APIToken, RequestTimeout: pve.DefaultRequestTimeout}
	if s.Endpoint == "" {
		s.Endpoint = getenv(EnvEndpoint)
	}
	if s.APIToken == "" {
		s.APIToken = getenv(EnvAPIToken)
	}
	if c.CACert != nil {
		s.CACert = *c.CACert
	} else {
		s.CACert = getenv(EnvCACert)
	}
	if c.Insecure != nil {
		s.Insecure = *c.Insecure
	} else if v := getenv(EnvInsecure); v != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return s, fmt.Errorf("%s=%q is not a boolean: use true or false", EnvInsecure, v)
		}
		s.Insecure = b
	}
	if c.RequestTimeout != nil {
		s.RequestTimeout = time.Duration(*c.RequestTimeout) * time.Second
	} else if v := getenv(EnvRequestTimeout); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return s, fmt.Errorf("%s=%q is not a number of seconds", EnvRequestTimeout, v)
		}
		s.RequestTimeout = time.Duration(n) * time.Second
	}
	s.VMWatchScale = 1
	if v := getenv(EnvVMWatchScale); v != "" {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		// Bounded so that a value meant as seconds (120) cannot stretch the
		// quiet windows to hours, nor overflow their durations.
		if err != nil || !(f >= minWatchScale && f <= maxWatchScale) {
			return s, fmt.Errorf("%s=%q is not a number from %g to %g: it multiplies how long the waits on Talos nodes "+
				"expect a node to be silent after an install, an upgrade, a reboot or a VM start (1 keeps the "+
				"defaults, 0.1 makes them a tenth); set such a number or unset it", EnvVMWatchScale, v, minWatchScale, maxWatchScale)
		}
		s.VMWatchScale = f
	}
	if c.OfflinePreview != nil {
		s.OfflinePreview = *c.OfflinePreview
	} else if v := getenv(EnvOfflinePreview); v != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return s, fmt.Errorf("%s=%q is not a boolean: use true or false", EnvOfflinePreview, v)
		}
		s.OfflinePreview = b
	}
	if c.FullPreviewOutputs != nil {
		s.FullPreviewOutputs = *c.FullPreviewOutputs
	} else if v := getenv(EnvFullPreviewOutputs); v != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return s, fmt.Errorf("%s=%q is not a boolean: use true or false", EnvFullPreviewOutputs, v)
		}
		s.FullPreviewOutputs = b
	}
	if s.OfflinePreview {
		// nothing is contacted: endpoint and token need not be set
		return s, nil
	}
	if s.RequestTimeout <= 0 {
		return s, fmt.Errorf("`requestTimeout` must be a positive number of seconds, got %s", s.RequestTimeout)
	}
	if s.Endpoint == "" && s.APIToken == "" {
		return s, errNotConfigured
	}
	if s.Endpoint == "" {
		return s, fmt.Errorf("the Proxmox VE endpoint is not set: set `proxmoxtalos:endpoint` " +
			"(pulumi config set proxmoxtalos:endpoint https://pve.example.com:8006) or " + EnvEndpoint)
	}
	if s.APIToken == "" {
		return s, fmt.Errorf("the Proxmox VE API token is not set: set `proxmoxtalos:apiToken` " +
			"(pulumi config set --secret proxmoxtalos:apiToken 'root@pam!pulumi=...') or " + EnvAPIToken)
	}
	if _, err := pve.NormalizeEndpoint(s.Endpoint); err != nil {
		return s, err
	}
	if _, err := pve.ParseAPIToken(s.APIToken); err != nil {
		return s, err
	}
	return s, nil
}

// errNotConfigured: neither endpoint nor token is set. That is fine for
// programs that use only the Talos resources; Client reports it to the
// Proxmox resources that need the API.
var errNotConfigured = errors.New("the proxmoxtalos provider is not configured with a Proxmox VE endpoint: " +
	"set proxmoxtalos:endpoint and proxmoxtalos:apiToken (or " + EnvEndpoint + " and " + EnvAPIToken + ")")

// Configure connects to the API once for the whole provider process.
func (c *Config) Configure(ctx context.Context) error {
	s, err := c.Resolve(os.Getenv)
	offline.Store(err == nil && s.OfflinePreview)
	fullPreviewOutputs.Store(s.FullPreviewOutputs)
	c.watchScale = s.VMWatchScale
	if errors.Is(err, errNotConfigured) {
		return nil
	}
	if err != nil {
		return err
	}
	if s.OfflinePreview {
		return nil // no client: nothing may contact Proxmox (offline.go)
	}
	cctx, cancel := context.WithTimeout(ctx, s.RequestTimeout+5*time.Second)
	defer cancel()
	client, err := pve.Connect(cctx, pve.Options{
		Endpoint:       s.Endpoint,
		APIToken:       s.APIToken,
		Insecure:       s.Insecure,
		CACertPEM:      s.CACert,
		RequestTimeout: s.RequestTimeout,
		UserAgent:      "pulumi-resource-proxmoxtalos/" + version.Version,
	})
	if err != nil {
		return err
	}
	c.client = client
	return nil
}

// fullPreviewOutputs is Settings.FullPreviewOutputs, set by Configure: a
// process-wide flag is its configuration's (see offline).
var fullPreviewOutputs atomic.Bool

// FullPreviewOutputs reports whether this provider was configured to keep
// every output of a TalosCluster's children in previews.
func FullPreviewOutputs() bool { return fullPreviewOutputs.Load() }

// Client returns the connected Proxmox VE client of this provider process.
func Client(ctx context.Context) (*pve.Client, error) {
	if Offline() {
		return nil, errOffline
	}
	c := infer.GetConfig[*Config](ctx)
	if c == nil || c.client == nil {
		return nil, errNotConfigured
	}
	return c.client, nil
}

// WatchScale is Settings.VMWatchScale of this provider process: 1 unless
// PROXMOXTALOS_VM_WATCH_SCALE says otherwise.
func WatchScale(ctx context.Context) float64 {
	if c := infer.GetConfig[*Config](ctx); c != nil && c.watchScale > 0 {
		return c.watchScale
	}
	return 1
}

// Get returns the provider configuration, for code that needs a setting
// rather than the client.
func Get(ctx context.Context) *Config {
	return infer.GetConfig[*Config](ctx)
}
