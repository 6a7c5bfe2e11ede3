package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// examples/ci/preview-comment.sh over a reviewed preview of a real pull request (a worker
// added; stdout and stderr of `pulumi preview --diff`): the component's summary comes first,
// then the counts, then the diff, folded.
func TestCIPreviewComment(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot(t)
	script := filepath.Join(root, "examples", "ci", "preview-comment.sh")
	preview := filepath.Join(root, "tests", "e2e", "testdata", "preview-goldens", "add-a-worker.txt")
	out, err := exec.Command(script, "prod", preview).CombinedOutput()
	if err != nil {
		t.Fatalf("preview-comment.sh: %v\n%s", err, out)
	}
	comment := string(out)
	summary := strings.Index(comment, "- **cluster demo: ")
	counts := strings.Index(comment, "Resources: + 2 to create, ~ 1 to update")
	details := strings.Index(comment, "<details>")
	diff := strings.Index(comment, "+ proxmoxtalos:proxmox:VirtualMachine: (create)")
	if !strings.HasPrefix(comment, "### `pulumi preview` of stack `prod`") || summary < 0 || counts < summary ||
		details < counts || diff < details || !strings.HasSuffix(strings.TrimSpace(comment), "</details>") {
		t.Errorf("the comment is not heading, summary, counts, folded diff:\n%s", comment)
	}

	failed, err := exec.Command(script, "prod", preview, "255").Output()
	if err != nil || !strings.Contains(string(failed), "**The preview failed (exit 255)**") {
		t.Errorf("a failed preview is not said so: %v\n%s", err, failed)
	}

	// An offline preview's comment says so on top, with each skipped check once.
	offline := filepath.Join(root, "tests", "e2e", "testdata", "offline-preview", "add-a-worker.txt")
	out, err = exec.Command(script, "prod", offline).CombinedOutput()
	if err != nil {
		t.Fatalf("preview-comment.sh: %v\n%s", err, out)
	}
	comment = string(out)
	note := strings.Index(comment, "**Offline preview**")
	counts = strings.Index(comment, "Resources: ")
	if note < 0 || counts < note || strings.Count(comment[note:counts], "\n- ") != 6 ||
		!strings.Contains(comment[note:counts], "- the hosts' free memory and CPUs") {
		t.Errorf("the offline preview's comment does not list the 6 skipped checks before the counts:\n%s", comment)
	}
}
