package talos

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// The wait for a URL manifest ends early only when the control plane's
// log shows its download failing again and again during this wait:
// failures logged before the wait, a URL the render no longer lacks, a
// few failures in a short time and an unreadable log end nothing.
func TestFetchWatchGivesUpOnlyOnRepeatedFailures(t *testing.T) {
	t.Parallel()
	const bad = "99 sha256:0123456789ab"
	clock := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	count, readErr := 2, error(nil) // two failures from an earlier update
	w := newFetchWatch("10.0.0.10", func(context.Context) ([]talosapi.FetchFailures, error) {
		return []talosapi.FetchFailures{{Priority: "99", Digest: "sha256:0123456789ab", Count: count, Last: "bad response code: 404"}}, readErr
	}, func() time.Time { return clock })
	step := func(d time.Duration, failures int, missing ...string) error {
		clock = clock.Add(d)
		count += failures
		return w.check(context.Background(), missing)
	}

	if err := step(0, 0, bad); err != nil {
		t.Fatalf("first look: %v", err)
	}
	if err := step(fetchLookEvery, 3, bad); err != nil {
		t.Fatalf("three failures just now: %v", err)
	}
	if err := step(fetchFailingFor, 2); err != nil {
		t.Fatalf("nothing missing: %v", err)
	}
	readErr = errors.New("unavailable")
	if err := step(fetchLookEvery, 0, bad); err != nil {
		t.Fatalf("unreadable log: %v", err)
	}
	readErr = nil
	if err := step(time.Second, 0, bad); err != nil {
		t.Fatalf("a look before fetchLookEvery: %v", err)
	}
	err := step(fetchLookEvery, 1, bad)
	if err == nil {
		t.Fatal("6 failures over 40s: no error")
	}
	for _, want := range []string{"control plane 10.0.0.10", "extraManifests URL sha256:0123456789ab", "6 failed downloads", "bad response code: 404", "talosctl -n 10.0.0.10 dmesg"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// A slow download logs no failure: the watch never ends the wait.
func TestFetchWatchWaitsForASlowDownload(t *testing.T) {
	t.Parallel()
	clock := time.Now()
	w := newFetchWatch("10.0.0.10", func(context.Context) ([]talosapi.FetchFailures, error) { return nil, nil },
		func() time.Time { return clock })
	for range 100 {
		clock = clock.Add(fetchLookEvery)
		if err := w.check(context.Background(), []string{"99 sha256:0123456789ab"}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMissingURLs(t *testing.T) {
	t.Parallel()
	ms := []talosapi.RenderedManifest{{ID: "99-https://a.example.com/a.yaml"}, {ID: "99-app"}}
	in := []string{"extraManifest " + talosconfig.InputDigest("https://a.example.com/a.yaml"), "extraManifest " + talosconfig.InputDigest("https://b.example.com/b.yaml"),
		"externalCloudProvider " + talosconfig.InputDigest("https://a.example.com/a.yaml"), "inlineManifest app sha256:111111111111"}
	got := strings.Join(missingURLs(ms, in), ", ")
	want := "99 " + talosconfig.InputDigest("https://b.example.com/b.yaml") + ", 30 " + talosconfig.InputDigest("https://a.example.com/a.yaml")
	if got != want {
		t.Errorf("missing %q, want %q", got, want)
	}
}
