package talos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// TestNodeReadyWaitsForTheCNIPod: a node that joins reports Ready only once
// flannel's pod has run on it (its init container writes the CNI
// configuration the container runtime waits for), and so only after the
// DaemonSet controller has counted it in kube-proxy's DaemonSet. Talos's
// health checks rely on that order ("all k8s nodes to report ready", then
// "kube-proxy to report ready", which is skipped while the DaemonSet wants
// no pods: pkg/cluster/check/default.go); the lab once reported nodes Ready
// at once and `talosctl health` skipped the kube-proxy check under load.
//
// The order is read from the objects' resourceVersions, which
// kube-apiserver takes from etcd's global revision, so the test does not
// depend on timing: it watches the three kinds while the worker joins.
func TestNodeReadyWaitsForTheCNIPod(t *testing.T) {
	tc := bootCluster(t, clusterOpts{cps: 1})
	tc.bootstrap(t)

	hc, server := kubeHTTP(t, tc.kubeconfig(t))
	ctx, cancel := context.WithCancel(ctxT(t))
	t.Cleanup(cancel)

	var mu sync.Mutex

	var readyAt, countedAt, flannelAt uint64 // 0: not seen yet

	watch(ctx, t, hc, server+"/api/v1/nodes", func(o watchedObject) {
		if o.Metadata.Name == "w1" && slices.Contains(o.Status.Conditions, kubeCondition{Type: "Ready", Status: "True", Reason: "KubeletReady", Message: "kubelet is posting ready status"}) {
			mu.Lock()
			readyAt = firstRV(readyAt, o)
			mu.Unlock()
		}
	})
	watch(ctx, t, hc, server+"/apis/apps/v1/namespaces/kube-system/daemonsets?labelSelector=k8s-app%3Dkube-proxy", func(o watchedObject) {
		if o.Status.DesiredNumberScheduled >= 2 {
			mu.Lock()
			countedAt = firstRV(countedAt, o)
			mu.Unlock()
		}
	})
	watch(ctx, t, hc, server+"/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dflannel", func(o watchedObject) {
		if o.Spec.NodeName == "w1" && o.Status.Phase == "Running" {
			mu.Lock()
			flannelAt = firstRV(flannelAt, o)
			mu.Unlock()
		}
	})

	// The worker joins now.
	a := tc.cps[0].addr().As4() // .11 of the test's block, as bootCluster numbers
	w := newVM("w1", netip.AddrFrom4([4]byte{a[0], a[1], a[2], 21}), "scsi0")
	w.start(tc.sim)
	waitPhase(t, w.node, PhaseMaintenance)

	if _, err := maintenanceClient(t, w.addr()).ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: tc.wConfig, Mode: machine.ApplyConfigurationRequest_AUTO}); err != nil {
		t.Fatal(err)
	}

	// Each of the three happens whatever the order; the watches deliver
	// each kind's events in order, not the kinds in step with each other.
	waitFor(t, "w1 Ready, counted by kube-proxy's DaemonSet, running flannel", func() bool {
		mu.Lock()
		defer mu.Unlock()

		return readyAt != 0 && countedAt != 0 && flannelAt != 0
	})

	mu.Lock()
	defer mu.Unlock()

	if flannelAt > readyAt {
		t.Errorf("w1 reported Ready at revision %d, before its flannel pod ran (revision %d)", readyAt, flannelAt)
	}

	if countedAt > readyAt {
		t.Errorf("w1 reported Ready at revision %d, before kube-proxy's DaemonSet counted it (revision %d)", readyAt, countedAt)
	}
}

// watchedObject: the fields of nodes, pods and DaemonSets the test reads.
type watchedObject struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Conditions             []kubeCondition `json:"conditions"`
		Phase                  string          `json:"phase"`
		DesiredNumberScheduled int             `json:"desiredNumberScheduled"`
	} `json:"status"`
}

// firstRV keeps the first revision seen.
func firstRV(seen uint64, o watchedObject) uint64 {
	if seen != 0 {
		return seen
	}

	rv, err := strconv.ParseUint(o.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("resourceVersion %q is not etcd's revision", o.Metadata.ResourceVersion))
	}

	return rv
}

// watch streams a collection's events (the current objects first, as
// ADDED) to each until ctx ends.
func watch(ctx context.Context, t *testing.T, hc *http.Client, url string, each func(watchedObject)) {
	t.Helper()

	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+sep+"watch=1", nil)

	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}

	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch %s: %s", url, resp.Status)
	}

	go func() {
		defer resp.Body.Close() //nolint:errcheck

		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)

		for sc.Scan() {
			var ev struct {
				Type   string        `json:"type"`
				Object watchedObject `json:"object"`
			}

			if json.Unmarshal(sc.Bytes(), &ev) == nil && (ev.Type == "ADDED" || ev.Type == "MODIFIED") {
				each(ev.Object)
			}
		}
	}()
}
