package proxmox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// readmeRecipe returns the pveum lines of the README's "Proxmox privileges"
// recipe, the first sh block of that section.
func readmeRecipe(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Proxmox privileges\n")
	if !ok {
		t.Fatal("README has no \"Proxmox privileges\" section")
	}
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "pveum ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestREADMERecipeIsTheProvidersRoles: the roles the README creates are
// the roles the provider's preview check names, privilege for privilege.
func TestREADMERecipeIsTheProvidersRoles(t *testing.T) {
	t.Parallel()
	roleRE := regexp.MustCompile(`^pveum role add (\S+) --privs "([^"]+)"$`)
	got := map[string][]string{}
	for _, l := range readmeRecipe(t) {
		if m := roleRE.FindStringSubmatch(l); m != nil {
			got[m[1]] = strings.Split(m[2], ",")
		}
	}
	for _, r := range proxmox.RecipeRoles() {
		if strings.HasPrefix(r.Name, "PVE") {
			continue // built-in
		}
		if !slices.Equal(got[r.Name], r.Privs) {
			t.Errorf("README role %s = %v, the provider's = %v", r.Name, got[r.Name], r.Privs)
		}
		delete(got, r.Name)
	}
	if len(got) > 0 {
		t.Errorf("README roles the provider does not know: %v", got)
	}
}

// withToken is a provider configured with another token of the same lab.
func (e *env) withToken(tok string) integration.Server {
	e.t.Helper()
	prov, err := provider.New()
	if err != nil {
		e.t.Fatal(err)
	}
	// the server keeps ctx for its provider's life: the test's
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	e.t.Cleanup(cancel)
	s, err := integration.NewServer(ctx, provider.Name, semver.MustParse("1.0.0"), integration.WithProvider(prov))
	if err != nil {
		e.t.Fatal(err)
	}
	err = s.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"endpoint": property.New(e.lab.Endpoint()),
		"apiToken": property.New(tok).WithSecret(true),
		"caCert":   property.New(string(e.lab.CACertPEM())),
	})})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func pveum(t *testing.T, e *env, lines ...string) string {
	t.Helper()
	var out string
	for _, l := range lines {
		var err error
		if out, err = e.lab.PVE.Pveum(l); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	return out
}

// TestEachRecipePrivilegeIsCheckedAtPreview: a token with the README's
// recipe passes the preview check of a VirtualMachine (ISO, disks, NIC,
// cloud-init, agent, pool), a clone and a DownloadFile; a token that lacks
// any one privilege of the recipe fails it, naming the privilege, the path
// and the pveum command that grants it.
func TestEachRecipePrivilegeIsCheckedAtPreview(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	tmpl := e.createTemplate()
	if err := e.adminClient().NewPool(context.Background(), "k8s", ""); err != nil {
		t.Fatal(err)
	}
	// the VM's ISO must exist (Check looks it up, as Proxmox does on create)
	e.create(downloadType, "talos-iso", isoInputs("pve1").Set("fileName", str("talos.iso")))
	full := map[string]property.Value{}
	for k, v := range vmInputs(e, "pve1", "cp1", "local:iso/talos.iso", 21) {
		full[k] = v
	}
	full["pool"] = str("k8s")
	clone := plainVM("pve1", "w1")
	delete(clone, "disks")
	clone["clone"] = obj(map[string]property.Value{"vmId": num(tmpl), "full": boolean(false)})
	download := isoInputs("pve1")
	check := func(s integration.Server) []p.CheckFailure {
		var out []p.CheckFailure
		for name, in := range map[string]property.Map{"cp1": property.NewMap(full), "w1": property.NewMap(clone)} {
			resp, err := s.Check(p.CheckRequest{Urn: urn(vmType, name), Inputs: in})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, resp.Failures...)
		}
		resp, err := s.Check(p.CheckRequest{Urn: urn(downloadType, "iso"), Inputs: download})
		if err != nil {
			t.Fatal(err)
		}
		return append(out, resp.Failures...)
	}

	// The README's recipe as written, plus the pool ACL it describes.
	recipe := readmeRecipe(t)
	tok := ""
	for _, l := range recipe {
		if out := pveum(t, e, l); out != "" {
			tok = out
		}
	}
	pveum(t, e, "acl modify /pool/k8s --roles PVEPoolAdmin --users pulumi@pve --tokens pulumi@pve!ci")
	if f := check(e.withToken(tok)); len(f) != 0 {
		t.Fatalf("the README's recipe does not pass the preview: %v", f)
	}

	// Every privilege left out in turn: same ACL paths, roles without it.
	type grant struct{ path, role string }
	grants := []grant{{"/vms", "ProxmoxTalosVM"}, {"/storage/local-lvm", "ProxmoxTalosDisk"},
		{"/storage/local", "ProxmoxTalosImage"}, {"/nodes", "ProxmoxTalosNode"},
		{"/sdn/zones/localnetwork", "ProxmoxTalosNetwork"}, {"/pool/k8s", "PVEPoolAdmin"}}
	n := 0
	for _, r := range proxmox.RecipeRoles() {
		for _, missing := range r.Privs {
			n++
			user := fmt.Sprintf("lack%d@pve", n)
			pveum(t, e, "user add "+user)
			for _, g := range grants {
				role := fmt.Sprintf("R%d%s", n, g.role)
				var privs []string
				for _, rr := range proxmox.RecipeRoles() {
					if rr.Name == g.role {
						for _, p := range rr.Privs {
							if !(rr.Name == r.Name && p == missing) {
								privs = append(privs, p)
							}
						}
					}
				}
				if len(privs) == 0 {
					continue
				}
				pveum(t, e, fmt.Sprintf(`role add %s --privs "%s"`, role, strings.Join(privs, ",")),
					fmt.Sprintf("acl modify %s --roles %s --users %s", g.path, role, user))
			}
			tok := pveum(t, e, "user token add "+user+" ci --privsep 0")
			failures := check(e.withToken(tok))
			var found bool
			for _, f := range failures {
				found = found || (strings.Contains(f.Reason, missing) && strings.Contains(f.Reason, "pveum acl modify /") &&
					strings.Contains(f.Reason, r.Name))
			}
			if !found {
				t.Errorf("without %s (role %s) the preview passes or does not say so: %v", missing, r.Name, failures)
			}
		}
	}
}
