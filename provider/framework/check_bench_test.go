package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// benchArgs is shaped like a ConfigurationApply of a 60-node cluster: a
// large secret text, a secret object, a list of every other node.
type benchArgs struct {
	Node   string            `pulumi:"node"`
	Client map[string]string `pulumi:"client" provider:"secret"`
	Config string            `pulumi:"config" provider:"secret"`
	Gate   *benchGate        `pulumi:"gate,optional"`
	IDs    map[string]int    `pulumi:"ids,optional"`
}

type benchGate struct {
	Endpoint string   `pulumi:"endpoint"`
	Others   []string `pulumi:"others"`
	Timeout  *string  `pulumi:"timeout,optional"`
}

type benchResource struct{}

func (*benchResource) Create(context.Context, infer.CreateRequest[benchArgs]) (infer.CreateResponse[benchArgs], error) {
	return infer.CreateResponse[benchArgs]{}, nil
}

func (*benchResource) Diff(context.Context, infer.DiffRequest[benchArgs, benchArgs]) (infer.DiffResponse, error) {
	return infer.DiffResponse{}, nil
}

func (*benchResource) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[benchArgs], error) {
	a, fails, err := DecodeInputs[benchArgs](ctx, req.NewInputs)
	return infer.CheckResponse[benchArgs]{Inputs: a, Failures: fails}, err
}

func benchInputs() property.Map {
	var others []property.Value
	for i := range 57 {
		others = append(others, property.New(fmt.Sprintf("127.0.0.%d", i)))
	}
	return property.NewMap(map[string]property.Value{
		"node": property.New("127.0.0.100"),
		"client": property.New(map[string]property.Value{
			"ca": property.New(strings.Repeat("c", 600)), "cert": property.New(strings.Repeat("c", 600)), "key": property.New(strings.Repeat("k", 300)),
		}).WithSecret(true),
		"config": property.New(strings.Repeat("x", 15000)).WithSecret(true),
		"gate": property.New(map[string]property.Value{
			"endpoint": property.New("https://127.0.0.5:6443"), "others": property.New(others),
		}),
		"ids": property.New(map[string]property.Value{"127.0.0.100": property.New(100.0)}),
	})
}

// BenchmarkCheck compares a Check through infer with one through Resource.
func BenchmarkCheck(b *testing.B) {
	urn := presource.NewURN("stack", "project", "", "index:Bench", "c")
	req := p.CheckRequest{Urn: urn, State: benchInputs(), Inputs: benchInputs()}
	for _, c := range []struct {
		name string
		r    infer.InferredResource
	}{{"infer", infer.Resource(&benchResource{})}, {"framework", Resource(&benchResource{})}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.r.Check(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
