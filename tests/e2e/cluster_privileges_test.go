package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// readmeRecipe is the README's "Proxmox privileges" recipe: the pveum
// commands that make the provider's least-privilege token pulumi@pve!ci.
func readmeRecipe(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Proxmox privileges\n")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README has no recipe block in \"Proxmox privileges\"")
	}
	return block
}

// useRecipeToken runs recipe in the lab and makes its token the one the
// projects of this lab use.
func (l *tcLab) useRecipeToken(t *testing.T, recipe string) {
	t.Helper()
	tokens, err := l.PVE.PveumScript(recipe)
	if err != nil {
		t.Fatal(err)
	}
	tok, ok := tokens["pulumi@pve!ci"]
	if !ok {
		t.Fatalf("the recipe minted no pulumi@pve!ci token: %v", tokens)
	}
	l.conn.APIToken = tok
}

// A token without a privilege the cluster needs fails the preview, naming
// the privilege, the path and the pveum command, and `up` creates nothing.
func TestClusterPreviewNamesMissingPrivilege(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	recipe := readmeRecipe(t)
	if !strings.Contains(recipe, "VM.Config.Memory,") {
		t.Fatal("the recipe has no VM.Config.Memory")
	}
	l.useRecipeToken(t, strings.Replace(recipe, "VM.Config.Memory,", "", 1))
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "noprivs", l.program(3, 2).render(t))
	p.ConfigureLab(t, l.conn)
	want := []string{"the API token pulumi@pve!ci lacks VM.Config.Memory on /vms",
		"`pveum acl modify /vms --roles ProxmoxTalosVM --tokens 'pulumi@pve!ci'`"}
	for _, r := range []harness.Result{p.Preview(t), p.Up(t)} {
		for _, w := range want {
			if r.ExitCode == 0 || !strings.Contains(r.Output(), w) {
				t.Errorf("exit %d, want a failure saying %q:\n%s", r.ExitCode, w, r.Output())
			}
		}
	}
	if vms := l.VMs(); len(vms) > 0 {
		t.Errorf("VMs were created without the privilege: %+v", vms)
	}
}
