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

// mapKey is a map key as joinPath writes it.
const mapKey = `(\.[A-Za-z_][A-Za-z0-9_]*|\["(?:[^"\\]|\\.)*"\])`

type secretValuesKey struct{}

// secretValues are the plain texts of the secret inputs of the construct
// running in ctx (see acceptSecretInputs).
func secretValues(ctx context.Context) []string {
	v, _ := ctx.Value(secretValuesKey{}).([]string)
	return v
}

// acceptSecretInputs unwraps the secrets among the inputs that may be
// secret and refuses the others by path.
func acceptSecretInputs(construct func(context.Context, p.ConstructRequest) (p.ConstructResponse, error)) func(context.Context, p.ConstructRequest) (p.ConstructResponse, error) {
	return func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		if req.Urn.Type().String() != tokenComponent {
			return construct(ctx, req)
		}
		var refused, values []string
		plain := unsecret(req.Inputs, func(path string, v property.Value) {
			switch {
			case !secretCapable.MatchString(path):
				refused = append(refused, path)
			case path == "cloudControllerManager.proxmox.tokenSecret":
				// an Input of the component: it stays a secret Output
			case v.IsString():
				values = append(values, sensitiveTexts(v.AsString())...)
			}
		})
		if len(refused) > 0 {
			return p.ConstructResponse{}, fmt.Errorf("TalosCluster %s: %s %s a secret, but the cluster is planned from "+
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
		resp, err := construct(context.WithValue(ctx, secretValuesKey{}, values), req)
		if err != nil {
			err = scrubSecrets(err, values)
		}
		return resp, err
	}
}

// unsecret returns m without secret wrappers, calling found for each
// secret with its input path. Values without a secret inside are kept as
// they are (with their dependencies).
func unsecret(m property.Map, found func(path string, v property.Value)) property.Map {
	var walk func(path string, v property.Value) (property.Value, bool)
	walk = func(path string, v property.Value) (property.Value, bool) {
		changed := false
		if v.Secret() {
			v, changed = v.WithSecret(false), true
			found(path, v)
		}
		switch {
		case v.IsMap():
			out := map[string]property.Value{}
			v.AsMap().AllStable(func(k string, e property.Value) bool {
				var c bool
				out[k], c = walk(joinPath(path, k), e)
				changed = changed || c
				return true
			})
			if changed {
				v = property.New(property.NewMap(out)).WithDependencies(v.Dependencies())
			}
		case v.IsArray():
			var out []property.Value
			v.AsArray().All(func(i int, e property.Value) bool {
				n, c := walk(fmt.Sprintf("%s[%d]", path, i), e)
				out = append(out, n)
				changed = changed || c
				return true
			})
			if changed {
				v = property.New(property.NewArray(out)).WithDependencies(v.Dependencies())
			}
		}
		return v, changed
	}
	out := map[string]property.Value{}
	changedAny := false
	m.AllStable(func(k string, v property.Value) bool {
		var c bool
		out[k], c = walk(k, v)
		changedAny = changedAny || c
		return true
	})
	if !changedAny {
		return m
	}
	return property.NewMap(out)
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
