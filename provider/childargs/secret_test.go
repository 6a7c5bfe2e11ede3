package childargs

import (
	"sync"
	"testing"

	"github.com/pulumi/pulumi-go-provider/integration/fake"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

type creds struct {
	CA  string `pulumi:"ca"`
	Key string `pulumi:"key" provider:"secret"`
}

type secretArgs struct {
	Node   string   `pulumi:"node"`
	Config string   `pulumi:"config" provider:"secret"`
	Values []string `pulumi:"values,optional" provider:"secret"`
	Creds  creds    `pulumi:"creds" provider:"secret"`
	Nested creds    `pulumi:"nested"`
	Token  *string  `pulumi:"token,optional" provider:"secret"`
}

// registered is what the engine receives for one child registered with
// props in a preview: through a real gRPC resource monitor that keeps
// unknowns and secrets, as the engine's does. (The SDK's own mocks drop
// unknowns and so refuse an unknown secret.)
func registered(t *testing.T, props func() (pulumi.Map, error)) resource.PropertyMap {
	t.Helper()
	var mu sync.Mutex
	var got resource.PropertyMap
	monitor := fake.NewResourceMonitorServer(&fake.SimpleMonitor{NewResourceF: func(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
		mu.Lock()
		defer mu.Unlock()
		got = args.Inputs
		return args.Name + "-id", resource.PropertyMap{}, nil
	}})
	monitorAddr, _, err := fake.StartMonitorServer(t.Context(), monitor)
	if err != nil {
		t.Fatal(err)
	}
	engineAddr, _, err := fake.StartEngineServer(t.Context(), fake.NewEngineServer())
	if err != nil {
		t.Fatal(err)
	}
	pctx, err := pulumi.NewContext(t.Context(), pulumi.RunInfo{
		Project: "proj", Stack: "stack", MonitorAddr: monitorAddr, EngineAddr: engineAddr, DryRun: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	err = pulumi.RunWithContext(pctx, func(ctx *pulumi.Context) error {
		m, err := props()
		if err != nil {
			return err
		}
		var res pulumi.CustomResourceState
		return ctx.RegisterResource("test:index:Child", "child", m, &res)
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

// unknownString is a string output not known in this preview (the output
// of a resource not created yet).
func unknownString() pulumi.StringOutput {
	return pulumi.UnsafeUnknownOutput(nil).ApplyT(func(v any) string { return "never" }).(pulumi.StringOutput)
}

// A `provider:"secret"` field reaches the engine as a secret whatever its
// value: known, unknown (a preview, a binding to an output not created
// yet: it stays unknown, and secret), already secret, or an object with an
// unknown entry (the known entries stay known). Untagged fields stay plain.
func TestSecretFieldsAreSecret(t *testing.T) {
	got := registered(t, func() (pulumi.Map, error) {
		a := &secretArgs{Node: "pve1", Values: []string{"s3cr3t-a", "s3cr3t-b"}, Creds: creds{CA: "ca-pem"}, Nested: creds{CA: "ca2", Key: "key2"}}
		unknownConfig, unknownKey := unknownString(), unknownString()
		alreadySecret := pulumi.ToSecret(pulumi.String("tok-s3cr3t")).(pulumi.StringOutput)
		return Map(a, Bind(&a.Config, unknownConfig), Bind(&a.Creds.Key, unknownKey), BindPtr(&a.Token, alreadySecret))
	})

	for _, k := range []resource.PropertyKey{"config", "values", "token"} {
		if !got[k].ContainsSecrets() {
			t.Errorf("%s = %v, want a secret", k, got[k])
		}
	}
	if v := got["config"]; !v.IsSecret() || !v.SecretValue().Element.IsComputed() {
		t.Errorf("config (unknown) = %v, want unknown and secret", v)
	}
	if v := got["values"]; !v.IsSecret() || !v.SecretValue().Element.IsArray() || len(v.SecretValue().Element.ArrayValue()) != 2 {
		t.Errorf("values (known) = %v, want the known list, secret", v)
	}
	if v := got["token"]; !v.IsSecret() || v.SecretValue().Element.StringValue() != "tok-s3cr3t" {
		t.Errorf("token (already secret) = %v", v)
	}
	creds := got["creds"]
	if !creds.IsObject() {
		t.Fatalf("creds = %v, want an object (one entry unknown, the other known)", creds)
	}
	ca, key := creds.ObjectValue()["ca"], creds.ObjectValue()["key"]
	if !ca.IsSecret() || ca.SecretValue().Element.StringValue() != "ca-pem" {
		t.Errorf("creds.ca = %v, want the known value, secret", ca)
	}
	if !key.IsSecret() || !key.SecretValue().Element.IsComputed() {
		t.Errorf("creds.key = %v, want unknown and secret", key)
	}
	if got["node"].ContainsSecrets() || !got["node"].IsString() {
		t.Errorf("node = %v, want plain", got["node"])
	}
	nested := got["nested"]
	if nested.IsSecret() || !nested.IsObject() || nested.ObjectValue()["ca"].IsSecret() || !nested.ObjectValue()["key"].IsSecret() {
		t.Errorf("nested = %v, want a plain object with its key secret", nested)
	}
}
