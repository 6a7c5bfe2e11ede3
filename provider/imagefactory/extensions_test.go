package imagefactory

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/factory"
)

func TestCheckExtensions(t *testing.T) {
	t.Parallel()

	f, err := factory.Start(factory.Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { f.Close() })

	c := &Client{BaseURL: f.URL()}

	if err := c.CheckExtensions(t.Context(), "v1.12.5", []string{"siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools"}); err != nil {
		t.Errorf("official extensions refused: %v", err)
	}

	err = c.CheckExtensions(t.Context(), "v1.12.5", []string{"siderolabs/qemu-guest-agent", "siderolabs/iscsi", "siderolabs/nvidia-open-gpu-kernel-modulez", "acme/zzzzzz"})

	var unknown *UnknownExtensionsError
	if !errors.As(err, &unknown) {
		t.Fatalf("unknown extensions: %v, want an *UnknownExtensionsError", err)
	}

	if !slices.Equal(unknown.Missing, []string{"siderolabs/iscsi", "siderolabs/nvidia-open-gpu-kernel-modulez", "acme/zzzzzz"}) {
		t.Errorf("missing = %v", unknown.Missing)
	}

	for _, want := range []string{
		`"siderolabs/iscsi" (did you mean siderolabs/iscsi-tools`, // a part of the name
		`(did you mean siderolabs/nvidia-open-gpu-kernel-modules`, // a typo
		`"acme/zzzzzz" for`, // nothing alike: no guess
		"for Talos v1.12.5", "/version/v1.12.5/extensions/official",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	// A factory that does not answer: an error for create, a warning for
	// a preview.
	down := &Client{BaseURL: "http://127.0.0.1:1", Attempts: 1}
	if err := down.CheckExtensions(t.Context(), "v1.12.5", []string{"siderolabs/iscsi-tools"}); err == nil || errors.As(err, &unknown) {
		t.Errorf("factory down: %v", err)
	}

	if w, err := down.CheckExtensionsOrWarn(t.Context(), "v1.12.5", []string{"siderolabs/iscsi-tools"}); err != nil || !strings.Contains(w, "extensions not checked") {
		t.Errorf("preview, factory down: warning %q, %v", w, err)
	}
}
