package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/factory"
)

// The demo's "lab is empty" check reads the lab's API: it passes on a fresh lab and fails,
// naming the volume, when an ISO is left on a storage with no VM at all (what a destroy
// that forgot its downloads would leave).
func TestShowStorageFailsOnALeftoverISO(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := lab.Start(ctx, lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	api, err := newPVEAPI(labInfo{APIURL: l.Endpoint() + "/api2/json", APIToken: l.APIToken(), CACert: string(l.CACertPEM())})
	if err != nil {
		t.Fatal(err)
	}
	if err := showVMs(api, false); err != nil {
		t.Fatalf("fresh lab: %v", err)
	}
	if err := showStorage(api, true); err != nil {
		t.Fatalf("fresh lab: %v", err)
	}

	id, err := l.Factory().Register(&factory.Schematic{})
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"content": {"iso"}, "filename": {"left-over.iso"},
		"url": {l.FactoryURL() + "/image/" + id + "/v1.12.5/nocloud-amd64.iso"}}
	req, err := http.NewRequest(http.MethodPost, api.base+"/nodes/pve1/storage/local/download-url", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "PVEAPIToken="+api.token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := api.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("download-url: %s", resp.Status)
	}
	if err := l.PVE.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}

	if err := showVMs(api, false); err != nil {
		t.Errorf("no VM was created, yet: %v", err)
	}
	err = showStorage(api, true)
	if err == nil || !strings.Contains(err.Error(), "pve1/local:iso/left-over.iso") {
		t.Errorf("showStorage on a lab holding an ISO = %v, want an error naming pve1/local:iso/left-over.iso", err)
	}
	if err := showStorage(api, false); err != nil {
		t.Errorf("after up (volumes expected): %v", err)
	}
}

func TestOnlySalt(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]bool{
		"encryptionsalt: v1:abc=:v1:def\n":            true,
		"encryptionsalt: v1:abc\nconfig:\n  a:b: c\n": false,
		"config:\n  a:b: c\n":                         false,
		"":                                            false,
	} {
		if got := onlySalt(text); got != want {
			t.Errorf("onlySalt(%q) = %v, want %v", text, got, want)
		}
	}
}
