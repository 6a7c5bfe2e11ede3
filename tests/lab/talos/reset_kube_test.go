package talos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// A graceful reset cordons the node before it goes (Talos' reset sequence
// runs its "drain" phase first, siderolabs/talos v1.12.5
// internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_sequencer.go Reset;
// the NodeCordonedSpec controller cordons in the resetting stage), a reset
// without graceful does not. Either way the kubelet shuts down gracefully
// first (Talos's StopAllPods/RemoveAllPods signal the shutdown and wait for
// its inhibitor lock), posting NotReady "node is shutting down", and the
// Node object stays with its last posted status until someone deletes it.
func TestResetLeavesTheNodeObjectCordonedOnlyWhenGraceful(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1, workers: 2})
	tc.bootstrap(t)

	ctx := ctxT(t)
	shutdown := watchShutdownStatus(t, tc, "w1", "w2")

	for _, c := range []struct {
		v        *vm
		graceful bool
	}{{tc.workers[0], true}, {tc.workers[1], false}} {
		if _, err := tc.client(t, c.v).MachineClient.Reset(ctx, &machine.ResetRequest{Graceful: c.graceful}); err != nil {
			t.Fatal(err)
		}

		waitFor(t, c.v.m.Name+" off", func() bool { return c.v.node.Status().Phase == PhaseOff })
	}

	if err := <-shutdown; err != nil {
		t.Error(err)
	}

	// The node lifecycle controller notices the silent kubelets.
	var nodes []kubeNodeObj

	waitFor(t, "w1 and w2 unreachable", func() bool {
		var err error
		nodes, err = tc.kubeNodes(t)

		for _, name := range []string{"w1", "w2"} {
			n, ok := nodeByName(nodes, name)
			if err != nil || !ok || readyStatus(n) != "Unknown" || !hasTaint(n, "node.kubernetes.io/unreachable") {
				return false
			}
		}

		return true
	})

	for _, c := range []struct {
		name     string
		addr     string
		cordoned bool
	}{{"w1", tc.workers[0].addr().String(), true}, {"w2", tc.workers[1].addr().String(), false}} {
		n, ok := nodeByName(nodes, c.name)
		if !ok {
			t.Fatalf("%s: the Node object is gone without a delete", c.name)
		}

		if n.Spec.Unschedulable != c.cordoned || hasTaint(n, "node.kubernetes.io/unschedulable") != c.cordoned {
			t.Errorf("%s: unschedulable=%v, want %v", c.name, n.Spec.Unschedulable, c.cordoned)
		}

		if readyStatus(n) == "True" || !hasTaint(n, "node.kubernetes.io/unreachable") {
			t.Errorf("%s: Ready %s after its reset", c.name, readyStatus(n))
		}

		if len(n.Status.Addresses) == 0 || n.Status.Addresses[0].Address != c.addr || n.Status.NodeInfo["kubeletVersion"] == "" {
			t.Errorf("%s: lost its last posted status: addresses %+v, nodeInfo %v", c.name, n.Status.Addresses, n.Status.NodeInfo)
		}
	}

	// kubectl delete node: 200 with a Status, then 404.
	hc, server := kubeHTTP(t, tc.kubeconfig(t))

	for _, want := range []int{http.StatusOK, http.StatusNotFound} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, server+"/api/v1/nodes/w1", nil)

		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close() //nolint:errcheck

		if resp.StatusCode != want {
			t.Fatalf("DELETE w1: %s, want %d", resp.Status, want)
		}
	}

	nodes, err := tc.kubeNodes(t)
	if err != nil {
		t.Fatal(err)
	}

	if _, ok := nodeByName(nodes, "w1"); ok || len(nodes) != 2 {
		t.Fatalf("nodes after deleting w1: %d", len(nodes))
	}
}

// watchShutdownStatus watches the named Node objects (as kubectl get nodes
// --watch) and reports whether each was posted NotReady with the graceful
// shutdown's message before it turned Unknown.
func watchShutdownStatus(t *testing.T, tc *testCluster, names ...string) <-chan error {
	t.Helper()

	hc, server := kubeHTTP(t, tc.kubeconfig(t))

	ctx, cancel := context.WithCancel(ctxT(t))
	t.Cleanup(cancel)

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server+"/api/v1/nodes?watch=1", nil)

	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}

	out := make(chan error, 1)

	go func() {
		defer resp.Body.Close() //nolint:errcheck

		seen := map[string]bool{}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)

		for sc.Scan() {
			var ev struct {
				Object struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
					Status struct {
						Conditions []kubeCondition `json:"conditions"`
					} `json:"status"`
				} `json:"object"`
			}

			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}

			for _, c := range ev.Object.Status.Conditions {
				switch {
				case c.Type != "Ready":
				case c.Status == "False" && c.Message == "node is shutting down":
					seen[ev.Object.Metadata.Name] = true
				case c.Status == "Unknown" && !seen[ev.Object.Metadata.Name]:
					out <- fmt.Errorf("%s turned Unknown without posting its graceful shutdown first", ev.Object.Metadata.Name)

					return
				}
			}

			done := true
			for _, n := range names {
				done = done && seen[n]
			}

			if done {
				out <- nil

				return
			}
		}

		out <- fmt.Errorf("the watch ended (%v) before %v posted their graceful shutdown: seen %v", sc.Err(), names, seen)
	}()

	return out
}
