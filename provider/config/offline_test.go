package config

import (
	"context"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Not parallel: the mode is process-wide (one provider process per
// provider configuration).
func TestOfflineGuardRefusesEverythingButPreviews(t *testing.T) {
	SetOfflineForTest(true)
	t.Cleanup(func() { SetOfflineForTest(false) })

	called := map[string]bool{}
	prov := WithOfflineGuard(p.Provider{
		Create: func(context.Context, p.CreateRequest) (p.CreateResponse, error) {
			called["create"] = true
			return p.CreateResponse{}, nil
		},
		Update: func(context.Context, p.UpdateRequest) (p.UpdateResponse, error) {
			called["update"] = true
			return p.UpdateResponse{}, nil
		},
		Delete: func(context.Context, p.DeleteRequest) error { called["delete"] = true; return nil },
		Read: func(context.Context, p.ReadRequest) (p.ReadResponse, error) {
			called["read"] = true
			return p.ReadResponse{}, nil
		},
	})
	urn := resource.URN("urn:pulumi:ci::demo::proxmoxtalos:index:TalosCluster$proxmoxtalos:proxmox:VirtualMachine::demo-cp-1")
	ctx := context.Background()

	if _, err := prov.Create(ctx, p.CreateRequest{Urn: urn, DryRun: true}); err != nil || !called["create"] {
		t.Fatalf("a create preview must go through: %v", err)
	}
	if _, err := prov.Update(ctx, p.UpdateRequest{Urn: urn, DryRun: true}); err != nil || !called["update"] {
		t.Fatalf("an update preview must go through: %v", err)
	}
	clear(called)
	_, errCreate := prov.Create(ctx, p.CreateRequest{Urn: urn})
	_, errUpdate := prov.Update(ctx, p.UpdateRequest{Urn: urn})
	errDelete := prov.Delete(ctx, p.DeleteRequest{Urn: urn})
	_, errRead := prov.Read(ctx, p.ReadRequest{Urn: urn})
	if len(called) > 0 {
		t.Fatalf("offline, these reached the resource: %v", called)
	}
	for op, err := range map[string]error{"create": errCreate, "update": errUpdate, "delete": errDelete, "read": errRead} {
		if err == nil {
			t.Errorf("offline %s is not refused", op)
			continue
		}
		for _, want := range []string{"proxmoxtalos:offlinePreview", EnvOfflinePreview, "VirtualMachine demo-cp-1", "nothing was changed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("offline %s: %q does not say %q", op, err, want)
			}
		}
	}
	if _, err := Client(ctx); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("Client offline: %v", err)
	}

	SetOfflineForTest(false)
	if _, err := prov.Create(ctx, p.CreateRequest{Urn: urn}); err != nil || !called["create"] {
		t.Errorf("online, a create is the resource's: %v", err)
	}
}

func TestComponentChild(t *testing.T) {
	t.Parallel()
	for urn, want := range map[resource.URN]bool{
		"urn:pulumi:ci::demo::proxmoxtalos:index:TalosCluster$proxmoxtalos:proxmox:VirtualMachine::demo-cp-1": true,
		"urn:pulumi:ci::demo::proxmoxtalos:proxmox:VirtualMachine::cp1":                                       false,
		"": false,
	} {
		if got := componentChild(urn); got != want {
			t.Errorf("componentChild(%q) = %v", urn, got)
		}
	}
}
