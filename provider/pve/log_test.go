package pve

import (
	"context"
	"testing"
)

func TestWarnfGoesToTheWarner(t *testing.T) {
	t.Parallel()
	var infos, warns []string
	ctx := WithLogger(context.Background(), func(m string) { infos = append(infos, m) })
	Warnf(ctx, "x %d", 1)
	if len(infos) != 1 || infos[0] != "warning: x 1" {
		t.Fatalf("without a warner: %q", infos)
	}
	ctx = WithWarner(ctx, func(m string) { warns = append(warns, m) })
	Warnf(ctx, "y %d", 2)
	if len(warns) != 1 || warns[0] != "y 2" || len(infos) != 1 {
		t.Fatalf("with a warner: warns %q infos %q", warns, infos)
	}
}
