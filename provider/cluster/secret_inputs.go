package cluster

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"gopkg.in/yaml.v3"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// Secret inputs. The component's Go arguments are plain values (the plan
// needs them), and the SDK cannot copy a secret, which arrives as an
// Output, into a plain field ("expected destination type to implement
// pulumi.Input or pulumi.Output, got string"). The inputs that only reach
// the machine configurations (which are secret) may be secrets: Construct
// gets their plain value, and the values are handed to each
// ConfigurationApply as sensitiveValues, so that its preview view shows
// them as sensitive, and scrubbed from the component's errors and
// warnings. Elsewhere a secret is refused: it would be written in plain
// text into a VM's name, tags or cloud-init settings, which Proxmox shows
// to anyone who can read the VM.
var secretCapable = regexp.MustCompile(`^(` + strings.Join([]string{
	`patches\[\d+\]`,
	`workerPatches\[\d+\]`,
	`nodePatches` + mapKey + `\[\d+\]`,
	`controlPlane(\.nodes\[\d+\])?\.patches\[\d+\]`,
	`workerPools\[\d+\](\.nodes\[\d+\])?\.patches\[\d+\]`,
	`registryMirrors` + mapKey + `\.(endpoints\[\d+\]|auth\.(username|password|identityToken))`,
	`extraManifests\[\d+\]`,
	`(cni\.)?inlineManifests\[\d+\]\.contents`,
	`cni\.manifestUrls\[\d+\]`,
	`cloudControllerManager\.(talosCcmManifest|servingCertApproverManifest|proxmox\.(manifest|tokenSecret))`,
	`gitOps\.(installManifests\[\d+\]|repository\.url)`,
}, "|") + `)$`)

// mapKey is a map key as framework.JoinInputPath writes it.
const mapKey = `(\.[A-Za-z_][A-Za-z0-9_]*|\["(?:[^"\\]|\\.)*"\])`

type secretValuesKey struct{}

// secretValues are the plain texts of the secret inputs of the construct
// running in ctx (see acceptSecretInputs).
func secretValues(ctx context.Context) []string {
	v, _ := ctx.Value(secretValuesKey{}).([]string)
	return v
}

// configContainer are the lists and maps that only reach the machine
// configurations: one that is unknown as a whole is planned as empty.
var configContainer = regexp.MustCompile(`^(` + strings.Join([]string{
	`patches`, `workerPatches`, `nodePatches(` + mapKey + `)?`,
	`controlPlane(\.nodes\[\d+\])?\.patches`,
	`workerPools\[\d+\](\.nodes\[\d+\])?\.patches`,
	`registryMirrors` + mapKey + `\.(endpoints|auth)`,
	`extraManifests`, `(cni\.)?inlineManifests(\[\d+\])?`, `cni\.manifestUrls`, `gitOps\.installManifests`,
}, "|") + `)$`)

// droppedWhenUnknown are list entries planned without (the
// configurations are unknown in that preview anyway).
var droppedWhenUnknown = regexp.MustCompile(`([pP]atches(` + mapKey + `)?|extraManifests|manifestUrls|installManifests|inlineManifests)\[\d+\]$`)

// unknownPlaceholder is what an unknown input that only reaches the
// machine configurations is planned with in a preview (the
// configurations themselves are unknown then): a value the checks accept.
// drop: leave the list entry out.
func unknownPlaceholder(path string) (v property.Value, drop bool) {
	const url = "https://unknown.invalid/unknown.yaml"
	switch {
	case vmSetting.MatchString(path):
		ph, drop := vmSettingPlaceholder(path)
		return property.New(ph), drop
	case strings.HasSuffix(path, ".endpoints"):
		return property.New(property.NewArray([]property.Value{property.New(url)})), false
	case strings.HasSuffix(path, ".auth"):
		return property.New(property.NewMap(map[string]property.Value{"username": property.New("unknown"), "password": property.New("unknown")})), false
	case strings.HasPrefix(path, "nodePatches") && !strings.HasSuffix(path, "]"):
		if path == "nodePatches" {
			return property.New(property.NewMap(nil)), false
		}
		return property.New(property.NewArray(nil)), false
	case droppedWhenUnknown.MatchString(path):
		return property.Value{}, true
	case configContainer.MatchString(path):
		return property.New(property.NewArray(nil)), false
	case strings.Contains(path, ".auth."), strings.HasSuffix(path, ".contents"):
		return property.New("unknown"), false
	}
	return property.New(url), false
}

type unknownConfigKey struct{}

// unknownConfigInputs are the inputs of the construct running in ctx that
// only reach the machine configurations and are not known yet (preview).
func unknownConfigInputs(ctx context.Context) []string {
	v, _ := ctx.Value(unknownConfigKey{}).([]string)
	return v
}

// acceptInputValues prepares the inputs for the component's plain Go
// arguments, which the SDK fills only from plain values ("expected
// destination type to implement pulumi.Input or pulumi.Output, got
// string"):
//   - dependencies are dropped: the value is known, so the resource it
//     came from exists, and the engine orders the component (and so its
//     children) after it already;
//   - secrets where they only reach the machine configurations are
//     unwrapped (see secretCapable); elsewhere refused by path;
//   - unknown values (a preview, with the value an output of a resource
//     not created yet) where they only reach the machine configurations
//     are planned with a placeholder, and the configurations are unknown
//     in that preview; so are the network settings that only reach the
//     VMs (vm_inputs.go), and those settings are unknown in the VMs'
//     inputs; elsewhere refuseUnknownInputs refuses them.
//
// The context it returns carries the secret texts (secretValues) and the
// unknown inputs (unknownConfigInputs, unknownVMInputs).
func acceptInputValues(ctx context.Context, req p.ConstructRequest) (context.Context, p.ConstructRequest, error) {
	var refused, values, unknown, unknownVM []string
	plain := framework.UnwrapInputs(req.Inputs, func(path string, v property.Value) {
		switch {
		case !secretCapable.MatchString(path) && !configContainer.MatchString(path):
			refused = append(refused, path)
		case path == "cloudControllerManager.proxmox.tokenSecret":
			// an Input of the component: it stays a secret Output
		default:
			values = append(values, secretTexts(v)...)
		}
	}, func(path string, v property.Value) (property.Value, bool) {
		switch {
		case vmSetting.MatchString(path):
			unknownVM = append(unknownVM, path)
		case path == "cloudControllerManager.proxmox.tokenSecret" || !secretCapable.MatchString(path) && !configContainer.MatchString(path):
			return v, true // stays unknown: refuseUnknownInputs names it
		default:
			unknown = append(unknown, path)
		}
		ph, drop := unknownPlaceholder(path)
		return ph, !drop
	})
	if len(refused) > 0 {
		return ctx, req, fmt.Errorf("TalosCluster %s: %s %s a secret, but the cluster is planned from "+
			"%s, and Proxmox (VM names, tags, cloud-init settings) and the cluster's outputs show %s in plain text: "+
			"pass %s as a plain value. Secrets are accepted where they only reach the (secret) machine "+
			"configurations: patches, registry mirror endpoints and auth, manifests and manifest URLs, the CCM "+
			"token secret, the GitOps repository URL", req.Urn.Name(), strings.Join(refused, ", "), isAre(len(refused)),
			itThem(len(refused)), itThem(len(refused)), itThem(len(refused)))
	}
	if tok := req.Inputs.Get("cloudControllerManager"); tok.IsMap() {
		// keep the token secret's own wrapping: it is a pulumi.Input
		plain = plain.Set("cloudControllerManager", keepTokenSecret(plain.Get("cloudControllerManager"), tok))
	}
	req.Inputs = plain
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) }) // longest first for scrubbing
	ctx = context.WithValue(ctx, secretValuesKey{}, values)
	ctx = context.WithValue(ctx, unknownConfigKey{}, unknown)
	ctx = context.WithValue(ctx, unknownVMKey{}, unknownVM)
	return ctx, req, nil
}

// secretTexts are the texts of a secret input, nested ones included (a
// secret auth object).
func secretTexts(v property.Value) []string {
	switch {
	case v.IsString():
		return sensitiveTexts(v.AsString())
	case v.IsMap():
		var out []string
		v.AsMap().AllStable(func(_ string, e property.Value) bool {
			out = append(out, secretTexts(e.WithSecret(false))...)
			return true
		})
		return out
	case v.IsArray():
		var out []string
		v.AsArray().All(func(_ int, e property.Value) bool {
			out = append(out, secretTexts(e.WithSecret(false))...)
			return true
		})
		return out
	}
	return nil
}

// keepTokenSecret puts the original (secret) tokenSecret back into the
// unwrapped cloudControllerManager input.
func keepTokenSecret(plain, orig property.Value) property.Value {
	op := orig.AsMap().Get("proxmox")
	if op.Secret() {
		return plain // the whole proxmox object was secret: its token is in values
	}
	if !op.IsMap() || !plain.IsMap() || !plain.AsMap().Get("proxmox").IsMap() {
		return plain
	}
	tok, ok := op.AsMap().GetOk("tokenSecret")
	if !ok {
		return plain
	}
	pm := plain.AsMap().Get("proxmox").AsMap().Set("tokenSecret", tok)
	return property.New(plain.AsMap().Set("proxmox", property.New(pm)))
}

// sensitiveTexts are the texts of a secret input that a configuration
// leaf, an error or a warning may show: the value itself and, for YAML
// (a patch, a manifest), each string leaf in it.
func sensitiveTexts(s string) []string {
	out := []string{s}
	dec := yaml.NewDecoder(strings.NewReader(s))
	for {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		var walk func(v any)
		walk = func(v any) {
			switch t := v.(type) {
			case map[string]any:
				for _, e := range t {
					walk(e)
				}
			case []any:
				for _, e := range t {
					walk(e)
				}
			case string:
				if t != "" && t != s {
					out = append(out, t)
				}
			}
		}
		walk(doc)
	}
	return out
}

// scrubSecrets replaces secret texts of at least 4 characters in err's
// message (shorter ones match too much of ordinary text).
func scrubSecrets(err error, values []string) error {
	if msg := scrubText(err.Error(), values); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

func scrubText(s string, values []string) string {
	for _, v := range values {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "(secret)")
		}
	}
	return s
}

func itThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
