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
		"Duration: 3m2s\n"

	want := "~ vm: [id=pve1/101]\n" +
		"  address: \"10.0.0.11/24\"\n" +
		"  iso: \"http://factory.lab/image/abc/v1.12.5/nocloud-amd64.iso\"\n" +
		"  endpoint: https://pve.lab:8006 and another server 127.0.0.1:<port>\n" +
		"  ~ machine.env.https_proxy: \"(sensitive, hmac:<fingerprint>)\" => \"(sensitive, hmac:<fingerprint>)\"\n" +
		"  mac <mac> uuid <uuid> at 01:07:33\n" +
		"waiting (<duration>) [<duration>]\n" +
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
