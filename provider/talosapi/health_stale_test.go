package talosapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// A Node object whose Ready condition a kubelet posted before the node's
// current kubelet started is not a Ready node. The API holds such a status
// after etcd lost quorum (nothing could mark the node Unknown) until the
// new kubelet posts NotReady: `up` on a broken cluster once reported
// success on it, and the nodes were NotReady right after
// (TestClusterUpOnABrokenCluster). Here the status is made old by hand, as
// the frozen API leaves it; the lab's kubelet keeps an unchanged status
// for a minute before it posts again.
func TestHealthIgnoresReadyFromAnEarlierKubelet(t *testing.T) {
	t.Parallel()

	lab, kc := healthyControlPlane(t, 3*time.Minute)
	ctx, target, o := lab.ctx, lab.target, lab.o
	req := talosapi.HealthRequest{ControlPlanes: []string{target.Node}, Creds: target.Creds, Kubeconfig: kc.Raw}
	old := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)

	// The lab's kubelet may post its status again between the patch and the
	// check (once a minute): then the check saw a fresh status, and the
	// patch is made again.
	for attempt := 1; ; attempt++ {
		name := oldReadyStatus(ctx, t, kc.Raw, old)
		rep := talosapi.CheckHealth(ctx, req, o)

		if posted := readyPosted(ctx, t, kc.Raw, name); !posted.Equal(old) {
			if attempt == 5 {
				t.Fatalf("the lab's kubelet posted over the old status %d times in a row", attempt)
			}

			continue
		}

		want := name + " (" + target.Node + ") Ready only as its previous kubelet reported it (at " + old.Format(time.TimeOnly)
		if !strings.Contains(strings.Join(rep.Problems, "\n"), want) {
			t.Fatalf("health with a Ready status from before the kubelet started: problems %q, want one saying %q", rep.Problems, want)
		}

		return
	}
}

// oldReadyStatus makes the only node's Ready condition one posted at
// posted, still True, and returns the node's name.
func oldReadyStatus(ctx context.Context, t *testing.T, kubeconfig []byte, posted time.Time) string {
	t.Helper()

	nodes, err := kube.Nodes(kubeconfig, "")
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes %+v, %v; want one", nodes, err)
	}

	stamp := posted.Format(time.RFC3339)
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady",`+
		`"message":"kubelet is posting ready status","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`, stamp, stamp)
	kubeDo(ctx, t, kubeconfig, http.MethodPatch, "/api/v1/nodes/"+nodes[0].Name+"/status", patch)

	return nodes[0].Name
}

// readyPosted is the node's Ready lastHeartbeatTime.
func readyPosted(ctx context.Context, t *testing.T, kubeconfig []byte, name string) time.Time {
	t.Helper()

	var node struct {
		Status struct {
			Conditions []struct {
				Type          string    `json:"type"`
				LastHeartbeat time.Time `json:"lastHeartbeatTime"`
			} `json:"conditions"`
		} `json:"status"`
	}

	if err := json.Unmarshal([]byte(kubeGet(ctx, t, kubeconfig, "/api/v1/nodes/"+name)), &node); err != nil {
		t.Fatal(err)
	}

	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" {
			return c.LastHeartbeat
		}
	}

	return time.Time{}
}
