package harness

import (
	"context"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// StartLab starts an in-process lab for one test (on loopback; TimeScale stays 0, as fast
// as possible, unless opts says otherwise), closes it when the test ends, and returns it
// with the values a stack needs to reach it.
func StartLab(t testing.TB, opts lab.Options) (*lab.Lab, Lab) {
	t.Helper()
	l, err := lab.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the lab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	return l, Lab{Endpoint: l.Endpoint(), APIToken: l.APIToken(), CACert: string(l.CACertPEM())}
}
