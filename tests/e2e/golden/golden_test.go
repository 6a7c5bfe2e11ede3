package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	t.Parallel()

	n := Normalizer{Literal: map[string]string{
		"127.45.67.":                    "10.0.0.",
		"http://127.0.0.1:41883":        "http://factory.lab",
		"https://127.0.0.1:40001":       "https://pve.lab:8006",
		"e2e-cluster-test-with-longish": "x",
	}}

	in := "~ vm: [id=pve1/101]\n" +
		"  address: \"127.45.67.11/24\"   \n" +
		"  iso: \"http://127.0.0.1:41883/image/abc/v1.12.5/nocloud-amd64.iso\"\n" +
		"  endpoint: https://127.0.0.1:40001 and another server 127.0.0.1:5555\n" +
		"  ~ machine.env.https_proxy: \"(sensitive, hmac:bb0666ef5d0a)\" => \"(sensitive, hmac:a5ce32d3b002)\"\n" +
		"  mac BC:24:11:0A:1b:2C uuid 0b8e1c1e-4a43-4c1e-9d2f-0a1b2c3d4e5f at 01:07:33\n" +
		"waiting (12s so far) [250ms]\n" +
		"warning: VM 103 on node pve1: cpu.cores takes effect only after a restart\n" +
		"  [0]: \"867c914a3bbb88137bd915a09fa16511d752ead9509758cf30c756dc965715e2\" vm 2/1 017f96cad6077f02 (config 6c3f270b)\n" +
		"  cores   : 2\n  sockets: 1\n" +
		"Duration: 3m2s\n"

	want := "~ vm: [id=pve1/101]\n" +
		"  address: \"10.0.0.11/24\"\n" +
		"  iso: \"http://factory.lab/image/abc/v1.12.5/nocloud-amd64.iso\"\n" +
		"  endpoint: https://pve.lab:8006 and another server 127.0.0.1:<port>\n" +
		"  ~ machine.env.https_proxy: \"(sensitive, hmac:<fingerprint>)\" => \"(sensitive, hmac:<fingerprint>)\"\n" +
		"  mac <mac> uuid <uuid> at 01:07:33\n" +
		"waiting (<duration>) [<duration>]\n" +
		"warning: VM <vmid> on node pve1: cpu.cores takes effect only after a restart\n" +
		"  [0]: \"<digest>\" vm 2/1 <digest> (config <digest>)\n" +
		"  cores: 2\n  sockets: 1\n" +
		"Duration: <duration>\n"

	if got := n.Normalize(in); got != want {
		t.Errorf("Normalize:\n%s\nwant:\n%s", got, want)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()

	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	Check(t, path, "a\nb\n")

	ft := &fakeT{}
	Check(ft, path, "a\nc\n")

	if !strings.Contains(ft.msg, "at line 2") {
		t.Errorf("mismatch report %q", ft.msg)
	}
}

type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper()                        {}
func (f *fakeT) Errorf(format string, a ...any) { f.msg = fmt.Sprintf(format, a...) }
func (f *fakeT) Fatalf(format string, a ...any) { f.msg = fmt.Sprintf(format, a...) }

func TestSortSteps(t *testing.T) {
	t.Parallel()

	in := `Previewing update (test):
  pulumi:pulumi:Stack: (same)
    [urn=urn:pulumi:test::demo::pulumi:pulumi:Stack::demo-test]
@ previewing update....
    ~ proxmoxtalos:proxmox:VirtualMachine: (update)
        [id=pve2/<vmid>]
        [urn=urn:b]
      ~ cpu: {
          ~ cores: 2 => 4
        }
@ previewing update....
    +-proxmoxtalos:proxmox:DownloadFile: (replace)
        [id=pve1/x]
        [urn=urn:a]
      ~ url: "x" => "y"
    --outputs:--
  ~ summary: "a" => "b"
Resources:
    ~ 2 to update
`
	want := `Previewing update (test):
  pulumi:pulumi:Stack: (same)
    [urn=urn:pulumi:test::demo::pulumi:pulumi:Stack::demo-test]
    +-proxmoxtalos:proxmox:DownloadFile: (replace)
        [id=pve1/x]
        [urn=urn:a]
      ~ url: "x" => "y"
    ~ proxmoxtalos:proxmox:VirtualMachine: (update)
        [id=pve2/<vmid>]
        [urn=urn:b]
      ~ cpu: {
          ~ cores: 2 => 4
        }
    --outputs:--
  ~ summary: "a" => "b"
Resources:
    ~ 2 to update
`
	if got := SortSteps(in); got != want {
		t.Errorf("SortSteps:\n%s\nwant:\n%s", got, want)
	}
}
