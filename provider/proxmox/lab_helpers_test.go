package proxmox_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver"
	proxmox "github.com/luthermonson/go-proxmox"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

const (
	vmType       = "proxmoxtalos:proxmox:VirtualMachine"
	downloadType = "proxmoxtalos:proxmox:DownloadFile"
)

// env is one lab and a configured provider talking to it.
type env struct {
	t   *testing.T
	lab *lab.Lab
	s   integration.Server
}

func newEnv(t *testing.T, opts lab.Options) *env {
	t.Helper()
	if opts.Booter == nil {
		opts.Booter = pve.BasicBooter
	}
	return startEnv(t, opts)
}

// newTalosEnv is a lab whose VMs boot simulated Talos nodes.
func newTalosEnv(t *testing.T) *env {
	t.Helper()
	return startEnv(t, lab.Options{})
}

func startEnv(t *testing.T, opts lab.Options) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	l, err := lab.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &env{t: t, lab: l, s: configuredProvider(t, ctx, l)}
}

// nextRun is the same lab with a new provider, as the next CLI command
// starts one: nothing read before is kept.
func (e *env) nextRun() *env {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	e.t.Cleanup(cancel)
	return &env{t: e.t, lab: e.lab, s: configuredProvider(e.t, ctx, e.lab)}
}

func configuredProvider(t *testing.T, ctx context.Context, l *lab.Lab) integration.Server {
	t.Helper()
	prov, err := provider.New()
	if err != nil {
		t.Fatal(err)
	}
	s, err := integration.NewServer(ctx, provider.Name, semver.MustParse("1.0.0"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"endpoint": property.New(l.Endpoint()),
		"apiToken": property.New(l.APIToken()).WithSecret(true),
		"caCert":   property.New(string(l.CACertPEM())),
	})})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func urn(typ, name string) presource.URN {
	return presource.URN(fmt.Sprintf("urn:pulumi:test::proj::%s::%s", typ, name))
}

// check runs Check like the engine does and fails the test on failures.
func (e *env) check(typ, name string, olds, news property.Map) property.Map {
	e.t.Helper()
	resp, err := e.s.Check(p.CheckRequest{Urn: urn(typ, name), State: olds, Inputs: news})
	if err != nil {
		e.t.Fatalf("check %s: %v", name, err)
	}
	if len(resp.Failures) > 0 {
		e.t.Fatalf("check %s: %v", name, resp.Failures)
	}
	return resp.Inputs
}

// checkFailures runs Check and returns its failures.
func (e *env) checkFailures(typ, name string, olds, news property.Map) []p.CheckFailure {
	e.t.Helper()
	resp, err := e.s.Check(p.CheckRequest{Urn: urn(typ, name), State: olds, Inputs: news})
	if err != nil {
		e.t.Fatalf("check %s: %v", name, err)
	}
	return resp.Failures
}

// create runs Check, a preview Create and a real Create.
func (e *env) create(typ, name string, inputs property.Map) (string, property.Map) {
	e.t.Helper()
	return e.createReplacement(typ, name, property.Map{}, inputs)
}

// createReplacement is create as the engine runs it to replace a resource
// whose state holds olds: Check sees the old inputs.
func (e *env) createReplacement(typ, name string, olds, inputs property.Map) (string, property.Map) {
	e.t.Helper()
	checked := e.check(typ, name, olds, inputs)
	if _, err := e.s.Create(p.CreateRequest{Urn: urn(typ, name), Properties: checked, DryRun: true}); err != nil {
		e.t.Fatalf("preview create %s: %v", name, err)
	}
	resp, err := e.s.Create(p.CreateRequest{Urn: urn(typ, name), Properties: checked})
	if err != nil {
		var reasons []string
		if resp.PartialState != nil {
			reasons = resp.PartialState.Reasons
		}
		e.t.Fatalf("create %s: %v %v", name, err, reasons)
	}
	return resp.ID, resp.Properties
}

func (e *env) diff(typ, name, id string, state, oldInputs, news property.Map) p.DiffResponse {
	e.t.Helper()
	checked := e.check(typ, name, oldInputs, news)
	resp, err := e.s.Diff(p.DiffRequest{Urn: urn(typ, name), ID: id, State: state, OldInputs: oldInputs, Inputs: checked})
	if err != nil {
		e.t.Fatalf("diff %s: %v", name, err)
	}
	return resp
}

func (e *env) read(typ, name, id string, state, inputs property.Map) p.ReadResponse {
	e.t.Helper()
	resp, err := e.s.Read(p.ReadRequest{Urn: urn(typ, name), ID: id, Properties: state, Inputs: inputs})
	if err != nil {
		e.t.Fatalf("read %s: %v", name, err)
	}
	return resp
}

func (e *env) update(typ, name, id string, state, oldInputs, news property.Map) property.Map {
	e.t.Helper()
	checked := e.check(typ, name, oldInputs, news)
	if _, err := e.s.Update(p.UpdateRequest{Urn: urn(typ, name), ID: id, State: state, OldInputs: oldInputs,
		Inputs: checked, DryRun: true}); err != nil {
		e.t.Fatalf("preview update %s: %v", name, err)
	}
	resp, err := e.s.Update(p.UpdateRequest{Urn: urn(typ, name), ID: id, State: state, OldInputs: oldInputs, Inputs: checked})
	if err != nil {
		e.t.Fatalf("update %s: %v", name, err)
	}
	return resp.Properties
}

func (e *env) delete(typ, name, id string, state property.Map) {
	e.t.Helper()
	if err := e.s.Delete(p.DeleteRequest{Urn: urn(typ, name), ID: id, Properties: state}); err != nil {
		e.t.Fatalf("delete %s: %v", name, err)
	}
}

// requireNoVMs fails unless the lab holds no VM.
func (e *env) requireNoVMs() {
	e.t.Helper()
	if vms := e.lab.VMs(); len(vms) != 0 {
		e.t.Fatalf("the lab still holds VMs: %+v", vms)
	}
}

func str(s string) property.Value { return property.New(s) }
func num(n int) property.Value    { return property.New(float64(n)) }
func boolean(b bool) property.Value {
	return property.New(b)
}
func obj(kv map[string]property.Value) property.Value { return property.New(property.NewMap(kv)) }
func arr(vs ...property.Value) property.Value         { return property.New(property.NewArray(vs)) }

func getNum(t *testing.T, m property.Map, k string) int {
	t.Helper()
	v := m.Get(k)
	if !v.IsNumber() {
		t.Fatalf("%s is not a number: %v", k, v.GoString())
	}
	return int(v.AsNumber())
}

func getStrings(m property.Map, k string) []string {
	var out []string
	v := m.Get(k)
	if !v.IsArray() {
		return nil
	}
	for _, e := range v.AsArray().All {
		out = append(out, e.AsString())
	}
	return out
}

// diffKinds renders a diff for messages and comparisons.
func diffKinds(d p.DiffResponse) map[string]p.DiffKind {
	out := map[string]p.DiffKind{}
	for k, v := range d.DetailedDiff {
		out[k] = v.Kind
	}
	return out
}

func hasReplace(d p.DiffResponse) bool {
	for _, v := range d.DetailedDiff {
		if strings.HasSuffix(string(v.Kind), "replace") {
			return true
		}
	}
	return false
}

// adminClient is a go-proxmox client of the lab, for what an administrator
// does outside Pulumi.
func (e *env) adminClient() *proxmox.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.lab.CACertPEM())
	tokenID, secret, _ := strings.Cut(e.lab.APIToken(), "=")
	return proxmox.NewClient(e.lab.Endpoint()+"/api2/json", proxmox.WithAPIToken(tokenID, secret), proxmox.WithRootCAs(pool))
}

// createTemplate creates the stopped plain VM "template" on pve1 (scsi0:
// 4 GiB on local-lvm) and turns it into a template; it returns its VMID.
func (e *env) createTemplate() int {
	e.t.Helper()
	tm := plainVM("pve1", "template")
	tm["started"] = boolean(false)
	_, tst := e.create(vmType, "template", property.NewMap(tm))
	tid := getNum(e.t, tst, "vmId")
	e.convertToTemplate("pve1", tid)
	return tid
}

// convertToTemplate turns a VM into a template through the API, as an
// administrator does with "Convert to template".
func (e *env) convertToTemplate(node string, vmid int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := e.adminClient().Node(ctx, node)
	if err != nil {
		e.t.Fatal(err)
	}
	vm, err := n.VirtualMachine(ctx, vmid)
	if err != nil {
		e.t.Fatal(err)
	}
	task, err := vm.ConvertToTemplate(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if task != nil {
		if err := task.Wait(ctx, 10*time.Millisecond, time.Minute); err != nil || (task.ExitStatus != "" && task.ExitStatus != "OK") {
			e.t.Fatalf("convert to template: %v %q", err, task.ExitStatus)
		}
	}
}

// releasedWhenCalled is the result of a create running in the background
// (done) while the lab holds a task: the held tasks are released once the
// create has made call, or has returned first (its checks then fail), or
// after 6000 looks (a minute) anyway.
func releasedWhenCalled[T any](e *env, done <-chan T, call string) T {
	for i := 0; i < 6000 && e.lab.PVE.Calls(call) == 0; i++ {
		select {
		case r := <-done:
			e.lab.PVE.ReleaseHeldTasks()
			return r
		case <-time.After(10 * time.Millisecond):
		}
	}
	e.lab.PVE.ReleaseHeldTasks()
	return <-done
}
