package talos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// Defaults of MachineSecrets inputs.
const (
	defaultCertificateLifetimeHrs = 8760 // one year, as talosctl issues
	defaultRenewalWindowHrs       = 720  // 30 days
)

// MachineSecrets is the cluster's secrets bundle (CAs, keys, tokens) and an
// admin client certificate. Now, when set, replaces the clock (tests).
type MachineSecrets struct {
	Now func() time.Time
}

// MachineSecretsArgs are the inputs.
type MachineSecretsArgs struct {
	TalosVersion                        string `pulumi:"talosVersion,optional"`
	ClientCertificateLifetimeHours      int    `pulumi:"clientCertificateLifetimeHours,optional"`
	ClientCertificateRenewalWindowHours int    `pulumi:"clientCertificateRenewalWindowHours,optional"`
	ImportSecrets                       string `pulumi:"importSecrets,optional" provider:"secret"`
}

// MachineSecretsState are the outputs.
type MachineSecretsState struct {
	MachineSecretsArgs
	MachineSecrets          string              `pulumi:"machineSecrets" provider:"secret"`
	ClientConfiguration     ClientConfiguration `pulumi:"clientConfiguration" provider:"secret"`
	ClientCertificateExpiry string              `pulumi:"clientCertificateExpiry"`
}

// Annotate describes the resource.
func (r *MachineSecrets) Annotate(a infer.Annotator) {
	a.Describe(r, docs.Description("proxmoxtalos:talos:MachineSecrets"))
}

// Annotate describes the inputs.
func (a *MachineSecretsArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.TalosVersion, "Talos version the cluster's nodes run (for example `v1.12.5`); it sets the version "+
			"contract of the bundle. Supported: "+talosconfig.SupportedTalosVersions+". Changing it later (a Talos "+
			"upgrade) keeps the secrets.")
		an.SetDefault(&a.TalosVersion, talosconfig.DefaultTalosVersion)
		an.Describe(&a.ClientCertificateLifetimeHours, "Validity of each admin client certificate, in hours. Applies to "+
			"the next certificate issued.")
		an.SetDefault(&a.ClientCertificateLifetimeHours, defaultCertificateLifetimeHrs)
		an.Describe(&a.ClientCertificateRenewalWindowHours, "A `pulumi up` issues a new admin client certificate once the "+
			"current one expires within this many hours. Must be shorter than the lifetime.")
		an.SetDefault(&a.ClientCertificateRenewalWindowHours, defaultRenewalWindowHrs)
		an.Describe(&a.ImportSecrets, "An existing secrets bundle, as written by `talosctl gen secrets` (YAML), to adopt "+
			"a cluster instead of generating new secrets. Changing it replaces the resource. Secret.")
	})
}

// Annotate describes the outputs.
func (s *MachineSecretsState) Annotate(a infer.Annotator) {
	framework.Annotate(a, s, func() {
		a.Describe(&s.MachineSecrets, "The secrets bundle in the YAML form of `talosctl gen secrets`; pass it to "+
			"getMachineConfiguration. Secret.")
		a.Describe(&s.ClientConfiguration, "Talos API CA and an admin client certificate and key for talosconfig and "+
			"the node-facing resources. Secret.")
		a.Describe(&s.ClientCertificateExpiry, "When the current admin client certificate expires (RFC 3339, UTC).")
	})
}

// WireDependencies keeps the bundle known in previews of in-place updates:
// it depends only on importSecrets, not on the version or lifetimes.
func (r *MachineSecrets) WireDependencies(f infer.FieldSelector, args *MachineSecretsArgs, state *MachineSecretsState) {
	imported := f.InputField(&args.ImportSecrets)
	f.OutputField(&state.MachineSecrets).DependsOn(imported)
	f.OutputField(&state.ClientConfiguration).DependsOn(imported)
	f.OutputField(&state.ClientCertificateExpiry).DependsOn(imported)
	f.OutputField(&state.MachineSecrets).AlwaysSecret()
	f.OutputField(&state.ClientConfiguration).AlwaysSecret()
}

func (r *MachineSecrets) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

// Check validates the inputs before anything is generated.
func (r *MachineSecrets) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[MachineSecretsArgs], error) {
	args, failures, err := infer.DefaultCheck[MachineSecretsArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[MachineSecretsArgs]{Inputs: args, Failures: failures}, err
	}
	fail := func(property, reason string) {
		failures = append(failures, p.CheckFailure{Property: property, Reason: reason})
	}
	if args.TalosVersion != "" {
		if v, err := talosconfig.CheckTalosVersion(args.TalosVersion); err != nil {
			fail("talosVersion", err.Error())
		} else {
			args.TalosVersion = talosconfig.TalosTag(v)
		}
	}
	if args.ClientCertificateLifetimeHours <= 0 {
		fail("clientCertificateLifetimeHours", fmt.Sprintf("must be a positive number of hours, got %d", args.ClientCertificateLifetimeHours))
	} else if args.ClientCertificateRenewalWindowHours < 0 || args.ClientCertificateRenewalWindowHours >= args.ClientCertificateLifetimeHours {
		fail("clientCertificateRenewalWindowHours", fmt.Sprintf("must be at least 0 and shorter than clientCertificateLifetimeHours (%d), got %d; "+
			"otherwise every `pulumi up` would issue a new certificate", args.ClientCertificateLifetimeHours, args.ClientCertificateRenewalWindowHours))
	}
	if args.ImportSecrets != "" {
		if _, err := talosconfig.UnmarshalSecrets(args.ImportSecrets); err != nil {
			fail("importSecrets", err.Error()+"; give the file `talosctl gen secrets` writes")
		}
	}
	return infer.CheckResponse[MachineSecretsArgs]{Inputs: args, Failures: failures}, nil
}

// Create generates (or imports) the bundle and issues the first certificate.
func (r *MachineSecrets) Create(ctx context.Context, req infer.CreateRequest[MachineSecretsArgs]) (infer.CreateResponse[MachineSecretsState], error) {
	state := MachineSecretsState{MachineSecretsArgs: req.Inputs}
	if req.DryRun {
		return infer.CreateResponse[MachineSecretsState]{Output: state}, nil
	}
	var (
		bundle *secrets.Bundle
		err    error
	)
	if req.Inputs.ImportSecrets != "" {
		bundle, err = talosconfig.UnmarshalSecrets(req.Inputs.ImportSecrets)
	} else {
		bundle, err = talosconfig.NewSecrets(req.Inputs.TalosVersion, r.now())
	}
	if err != nil {
		return infer.CreateResponse[MachineSecretsState]{}, fmt.Errorf("machine secrets %s: %w", req.Name, err)
	}
	state.MachineSecrets, err = talosconfig.MarshalSecrets(bundle)
	if err != nil {
		return infer.CreateResponse[MachineSecretsState]{}, err
	}
	if err := r.issueCertificate(&state, bundle); err != nil {
		return infer.CreateResponse[MachineSecretsState]{}, err
	}
	sum := sha256.Sum256([]byte(bundle.Cluster.ID))
	return infer.CreateResponse[MachineSecretsState]{ID: "talos-" + hex.EncodeToString(sum[:8]), Output: state}, nil
}

func (r *MachineSecrets) issueCertificate(state *MachineSecretsState, bundle *secrets.Bundle) error {
	lifetime := time.Duration(state.ClientCertificateLifetimeHours) * time.Hour
	now := r.now()
	cert, err := talosconfig.NewAdminCertificate(bundle, now, lifetime)
	if err != nil {
		return err
	}
	state.ClientConfiguration = ClientConfiguration{
		CACertificate:     string(bundle.Certs.OS.Crt),
		ClientCertificate: string(cert.CertPEM),
		ClientKey:         string(cert.KeyPEM),
	}
	state.ClientCertificateExpiry = now.Add(lifetime).Format(time.RFC3339)
	return nil
}

func (r *MachineSecrets) renewalDue(state MachineSecretsState) bool {
	window := time.Duration(state.ClientCertificateRenewalWindowHours) * time.Hour
	return talosconfig.NeedsRenewal([]byte(state.ClientConfiguration.ClientCertificate), r.now(), window)
}

// Diff: a new imported bundle replaces; anything else updates in place; a
// certificate due for renewal shows as an update of clientConfiguration.
func (r *MachineSecrets) Diff(ctx context.Context, req infer.DiffRequest[MachineSecretsArgs, MachineSecretsState]) (infer.DiffResponse, error) {
	diff := map[string]p.PropertyDiff{}
	olds, news := req.State, req.Inputs
	if olds.ImportSecrets != news.ImportSecrets {
		diff["importSecrets"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}
	if olds.TalosVersion != news.TalosVersion {
		diff["talosVersion"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if olds.ClientCertificateLifetimeHours != news.ClientCertificateLifetimeHours {
		diff["clientCertificateLifetimeHours"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if olds.ClientCertificateRenewalWindowHours != news.ClientCertificateRenewalWindowHours {
		diff["clientCertificateRenewalWindowHours"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	renewal := olds
	renewal.ClientCertificateRenewalWindowHours = news.ClientCertificateRenewalWindowHours
	if r.renewalDue(renewal) {
		diff["clientConfiguration"] = p.PropertyDiff{Kind: p.Update}
	}
	return infer.DiffResponse{HasChanges: len(diff) > 0, DetailedDiff: diff}, nil
}

// Update keeps the bundle and renews the certificate when it is due.
func (r *MachineSecrets) Update(ctx context.Context, req infer.UpdateRequest[MachineSecretsArgs, MachineSecretsState]) (infer.UpdateResponse[MachineSecretsState], error) {
	state := req.State
	state.MachineSecretsArgs = req.Inputs
	if req.DryRun || !r.renewalDue(state) {
		return infer.UpdateResponse[MachineSecretsState]{Output: state}, nil
	}
	bundle, err := talosconfig.UnmarshalSecrets(state.MachineSecrets)
	if err != nil {
		return infer.UpdateResponse[MachineSecretsState]{}, fmt.Errorf("machine secrets in state: %w", err)
	}
	if err := r.issueCertificate(&state, bundle); err != nil {
		return infer.UpdateResponse[MachineSecretsState]{}, err
	}
	enginelog.Logger(ctx).Infof("renewed the admin client certificate; it now expires %s", state.ClientCertificateExpiry)
	return infer.UpdateResponse[MachineSecretsState]{Output: state}, nil
}
