package talosapi

import (
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
)

// The facts kept from a parse already made (a node's active configuration,
// parsed on receipt) are the ones a parse of the text gives, and a later
// question about the text finds them without parsing it again; a digest
// left out is computed when asked, the same as from the text.
func TestKeptFactsAreTheTextsOwn(t *testing.T) {
	cfg, err := configloader.NewFromBytes(testMachineConfig(t, "/dev/sda"))
	if err != nil {
		t.Fatal(err)
	}

	base, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		t.Fatal(err)
	}

	fresh := parseFacts(base)
	if fresh.err != nil || fresh.digest == "" || fresh.kubeletImage == "" {
		t.Fatalf("facts of the test configuration: %+v", fresh)
	}

	for _, withDigest := range []bool{false, true} {
		// a text of its own (a comment per case), so that no other test
		// or case has asked it
		label := "no-digest"
		if withDigest {
			label = "digest"
		}

		text := append(append([]byte{}, base...), []byte("\n# case: "+label+"\n")...)

		parsed, err := configloader.NewFromBytes(text)
		if err != nil {
			t.Fatal(err)
		}

		key := memo.KeyOf(string(text))
		if _, kept := configFactsByText.Get(key); kept {
			t.Fatalf("%s: the text's facts are kept before anything asked", label)
		}

		keepFacts(text, parsed, withDigest)

		kept, ok := configFactsByText.Get(key)
		if !ok {
			t.Fatalf("%s: keepFacts kept nothing", label)
		}

		want := parseFacts(text)
		if kept.kubeletImage != want.kubeletImage || kept.installImage != want.installImage || kept.err != nil {
			t.Errorf("%s: kept facts %+v, a parse of the text gives %+v", label, kept, want)
		}

		if kept.noDigest == withDigest || (withDigest && kept.digest != want.digest) {
			t.Errorf("%s: kept digest %q (left out: %v), want %q", label, kept.digest, kept.noDigest, want.digest)
		}

		if got := ConfigKubeletImage(text); got != want.kubeletImage {
			t.Errorf("%s: ConfigKubeletImage = %q, want %q", label, got, want.kubeletImage)
		}

		if d, err := ConfigDigest(text); err != nil || d != want.digest {
			t.Errorf("%s: ConfigDigest = %q, %v; want %q", label, d, err, want.digest)
		}
	}
}
