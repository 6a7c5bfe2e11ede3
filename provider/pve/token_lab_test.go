package pve_test

import (
	"context"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// clientWithToken runs a pveum script on the lab and connects with the
// token it names (user!tokenid), for tests of restricted privileges.
func clientWithToken(t *testing.T, s *labpve.Server, script, token string) (context.Context, *pve.Client) {
	t.Helper()
	tokens, err := s.PveumScript(script)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c, err := pve.Connect(ctx, pve.Options{Endpoint: s.Endpoint(), APIToken: tokens[token], CACertPEM: string(s.CACertPEM())})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, c
}
