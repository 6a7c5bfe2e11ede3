package talosapi

import (
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
)

// The facts kept from a parse already made (a node's active configuration,
// parsed on receipt) are the ones a parse of the text gives, and a later
// question about the text finds them without parsing it again.
func TestKeptFactsAreTheTextsOwn(t *testing.T) {
	cfg, err := configloader.NewFromBytes(testMachineConfig(t, "/dev/sda"))
	if err != nil {
		t.Fatal(err)
	}
	// a text of its own (no comments), so that no other test has asked it
	text, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := configloader.NewFromBytes(text)
	if err != nil {
		t.Fatal(err)
	}

	if _, kept := configFactsByText.Get(memo.KeyOf(string(text))); kept {
		t.Fatal("the text's facts are kept before anything asked")
	}

	keepFacts(text, parsed)

	kept, ok := configFactsByText.Get(memo.KeyOf(string(text)))
	if !ok {
		t.Fatal("keepFacts kept nothing")
	}

	fresh, err := loadConfig(text)
	if err != nil {
		t.Fatal(err)
	}

	if want := factsOfConfig(fresh); kept != want {
		t.Errorf("kept facts %+v, a parse of the text gives %+v", kept, want)
	}

	if kept.digest == "" || kept.kubeletImage == "" {
		t.Errorf("kept facts lack something: %+v", kept)
	}

	if got := factsOf(text); got != kept {
		t.Errorf("factsOf after keepFacts = %+v, want the kept %+v", got, kept)
	}
}
