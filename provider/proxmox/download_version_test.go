package proxmox

import (
	"strings"
	"testing"
)

func TestImportContentNeedsPVE84(t *testing.T) {
	t.Parallel()
	for v, refused := range map[string]bool{
		"7.4.3": true, "8.0.4": true, "8.3.5": true, "8.4.0": false, "8.4": false, "9.1.3": false, "10.0": false, "": false, "x": false,
	} {
		msg := importContentUnsupported(v)
		if (msg != "") != refused {
			t.Errorf("version %q: %q, refused %v", v, msg, refused)
		}
		if refused && (!strings.Contains(msg, "8.4 or later") || !strings.Contains(msg, v)) {
			t.Errorf("version %q: message %q", v, msg)
		}
	}
}
