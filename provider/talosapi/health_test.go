package talosapi

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
)

func svc(id, state string, healthy, unknown bool, msg string) *machineapi.ServiceInfo {
	return &machineapi.ServiceInfo{Id: id, State: state, Health: &machineapi.ServiceHealth{Healthy: healthy, Unknown: unknown, LastMessage: msg}}
}

func TestCheckServices(t *testing.T) {
	t.Parallel()

	healthy := []*machineapi.ServiceInfo{
		svc("apid", "Running", true, false, ""), svc("kubelet", "Running", true, false, ""),
		svc("etcd", "Running", true, false, ""), svc("trustd", "Running", false, true, ""), // health unknown is fine
		svc("udevd", "Finished", false, false, ""), // not required
	}

	if p := checkServices(healthy, controlPlaneServices); p != "" {
		t.Fatalf("healthy control plane reported: %s", p)
	}

	broken := []*machineapi.ServiceInfo{
		svc("apid", "Running", true, false, ""), svc("kubelet", "Waiting", false, false, ""),
		svc("etcd", "Running", false, false, "context deadline exceeded"),
	}

	p := checkServices(broken, controlPlaneServices)
	for _, want := range []string{"kubelet Waiting", "etcd unhealthy (context deadline exceeded)", "trustd not present"} {
		if !strings.Contains(p, want) {
			t.Errorf("%q lacks %q", p, want)
		}
	}

	if p := checkServices(broken[:2], workerServices); !strings.Contains(p, "kubelet Waiting") || strings.Contains(p, "etcd") {
		t.Errorf("worker: %q", p)
	}
}

func member(host string, learner bool, ip string) *machineapi.EtcdMember {
	return &machineapi.EtcdMember{Hostname: host, PeerUrls: []string{"https://" + ip + ":2380"}, IsLearner: learner}
}

func TestCheckEtcd(t *testing.T) {
	t.Parallel()

	cps := []string{"10.5.0.2", "10.5.0.3:50000", "10.5.0.4"}
	all := []*machineapi.EtcdMember{member("cp1", false, "10.5.0.2"), member("cp2", false, "10.5.0.3"), member("cp3", false, "10.5.0.4")}

	if p := checkEtcd(all, cps); p != "" {
		t.Fatalf("healthy etcd reported: %s", p)
	}

	// Scale-down left a member behind, one node is a learner, one is missing.
	bad := []*machineapi.EtcdMember{member("cp1", false, "10.5.0.2"), member("cp2", true, "10.5.0.3"), member("old", false, "10.5.0.9")}

	p := checkEtcd(bad, cps)
	for _, want := range []string{"member old (https://10.5.0.9:2380) is not an expected control plane", "cp2 is still a learner", "not members yet: 10.5.0.4"} {
		if !strings.Contains(p, want) {
			t.Errorf("%q lacks %q", p, want)
		}
	}
}

// A node the check does not require (later in a rollout, or removed after
// the check) may or may not be a member.
func TestCheckEtcdWithOtherMembers(t *testing.T) {
	t.Parallel()

	cps := []string{"10.5.0.2"}
	ms := []*machineapi.EtcdMember{member("cp1", false, "10.5.0.2"), member("cp2", false, "10.5.0.3"), member("cp3", false, "10.5.0.4")}

	if p := checkEtcd(withoutMembers(ms, []string{"10.5.0.3", "10.5.0.4:50000"}), cps); p != "" {
		t.Errorf("other members reported: %s", p)
	}

	if p := checkEtcd(withoutMembers(ms, []string{"10.5.0.3"}), cps); !strings.Contains(p, "member cp3") {
		t.Errorf("a member that is not among the others is not reported: %q", p)
	}
}

func TestParseAndCheckNodes(t *testing.T) {
	t.Parallel()

	body := []byte(`{"kind":"NodeList","items":[
 {"metadata":{"name":"cp1"},"spec":{"providerID":"proxmox://pve1/101"},"status":{"addresses":[{"type":"InternalIP","address":"10.5.0.2"},{"type":"Hostname","address":"cp1"}],"conditions":[{"type":"Ready","status":"True"}]}},
 {"metadata":{"name":"w1"},"spec":{},"status":{"addresses":[{"type":"InternalIP","address":"10.5.0.7"}],"conditions":[{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"False","message":"CNI not ready"}]}}
]}`)

	nodes, err := parseNodes(body)
	if err != nil {
		t.Fatal(err)
	}

	if len(nodes) != 2 || !nodes[0].Ready || nodes[1].Ready || nodes[0].ProviderID != "proxmox://pve1/101" {
		t.Fatalf("nodes = %+v", nodes)
	}

	if p := checkNodes(nodes, []string{"10.5.0.2"}, nil); p != "" {
		t.Fatalf("ready node reported: %s", p)
	}

	p := checkNodes(nodes, []string{"10.5.0.2", "10.5.0.7:50000", "10.5.0.8"}, nil)
	if !strings.Contains(p, "w1 (10.5.0.7) not Ready") || !strings.Contains(p, "10.5.0.8 not registered") {
		t.Fatalf("problems = %q", p)
	}
}

// A Ready condition counts only when the node's current kubelet posted it:
// one posted before the kubelet started is the previous run's.
func TestCheckNodesReadyFromAnEarlierKubelet(t *testing.T) {
	t.Parallel()

	body := []byte(`{"items":[
 {"metadata":{"name":"cp1"},"status":{"addresses":[{"type":"InternalIP","address":"10.5.0.2"}],"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-28T15:02:53Z"}]}},
 {"metadata":{"name":"cp2"},"status":{"addresses":[{"type":"InternalIP","address":"10.5.0.3"}],"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-28T15:03:10Z"}]}},
 {"metadata":{"name":"w1"},"status":{"addresses":[{"type":"InternalIP","address":"10.5.0.7"}],"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":""}]}}
]}`)

	nodes, err := parseNodes(body)
	if err != nil {
		t.Fatal(err)
	}

	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}

		return ts
	}
	since := map[string]time.Time{
		"10.5.0.2": at("2026-11-28T15:03:04.5Z"), // started after cp1's last status
		"10.5.0.3": at("2026-11-28T15:03:10.7Z"), // posted in the second it started
		"10.5.0.7": at("2026-11-28T15:03:04Z"),   // no time: nothing says it is old
	}

	p := checkNodes(nodes, []string{"10.5.0.2", "10.5.0.3", "10.5.0.7"}, since)
	if want := "cp1 (10.5.0.2) Ready only as its previous kubelet reported it (at 15:02:53; the kubelet runs since 15:03:04)"; p != want {
		t.Fatalf("problems %q, want %q", p, want)
	}

	if p := checkNodes(nodes, []string{"10.5.0.2"}, nil); p != "" {
		t.Fatalf("without kubelet start times: %q", p)
	}
}

func TestRunningSince(t *testing.T) {
	t.Parallel()

	ts := func(sec int64) *timestamppb.Timestamp { return timestamppb.New(time.Unix(sec, 0)) }
	ev := func(state string, sec int64) *machineapi.ServiceEvent {
		return &machineapi.ServiceEvent{State: state, Ts: ts(sec)}
	}
	info := func(state string, evs ...*machineapi.ServiceEvent) *machineapi.ServiceInfo {
		return &machineapi.ServiceInfo{Id: "kubelet", State: state, Events: &machineapi.ServiceEvents{Events: evs}}
	}

	for _, c := range []struct {
		name string
		info *machineapi.ServiceInfo
		want int64 // 0: zero time
	}{
		{"restarted", info("Running", ev("Preparing", 10), ev("Running", 11), ev("Running", 12), ev("Stopping", 20), ev("Preparing", 21), ev("Running", 25), ev("Running", 30)), 25},
		{"starting, waiting, then running", info("Running", ev("Starting", 5), ev("Waiting", 6), ev("Preparing", 9), ev("Running", 10), ev("Running", 15)), 10},
		{"only running events kept: the start may have been dropped", info("Running", ev("Running", 40), ev("Running", 50)), 0},
		{"state running, last event not", info("Running", ev("Preparing", 9), ev("Running", 10), ev("Preparing", 20)), 0},
		{"start without a time", info("Running", ev("Preparing", 9), &machineapi.ServiceEvent{State: "Running"}, ev("Running", 15)), 0},
		{"not running", info("Waiting", ev("Running", 11), ev("Waiting", 20)), 0},
		{"no events", info("Running"), 0},
	} {
		got := runningSince(c.info)
		if c.want == 0 && !got.IsZero() || c.want != 0 && !got.Equal(time.Unix(c.want, 0)) {
			t.Errorf("%s: %v, want %d", c.name, got, c.want)
		}
	}
}

// Talos keeps the latest 64 events of a service
// (internal/app/machined/pkg/system/events/events.go, MaxEventsToKeep): a
// kubelet whose health check flapped has only Running events left, the
// oldest later than its start. Its Ready node, which it last posted before
// that oldest event (an unchanged status is posted every 5 minutes), is
// Ready: the start is not known. With the whole history, a Ready from
// before the start is still the previous kubelet's.
func TestCheckNodesKubeletStartOnlyWhenKept(t *testing.T) {
	t.Parallel()

	at := func(sec int64) time.Time {
		return time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC).Add(time.Duration(sec) * time.Second)
	}
	ev := func(state string, sec int64) *machineapi.ServiceEvent {
		return &machineapi.ServiceEvent{State: state, Ts: timestamppb.New(at(sec))}
	}

	var flapped []*machineapi.ServiceEvent
	for i := range int64(64) {
		flapped = append(flapped, ev("Running", 100+i*2)) // health checks from 100 s on; started long before
	}

	full := []*machineapi.ServiceEvent{ev("Waiting", 40), ev("Preparing", 55), ev("Running", 60), ev("Running", 70)}

	nodes := []kubeNode{{Name: "cp1", Addresses: []string{"10.5.0.2"}, Ready: true, ReadyPosted: at(90)}}

	for _, c := range []struct {
		name   string
		events []*machineapi.ServiceEvent
		posted int64
		want   string
	}{
		{"truncated history, posted before the oldest kept event", flapped, 90, ""},
		{"full history, posted before the start", full, 59, "cp1 (10.5.0.2) Ready only as its previous kubelet reported it (at 15:00:59; the kubelet runs since 15:01:00)"},
		{"full history, posted after the start", full, 61, ""},
	} {
		nodes[0].ReadyPosted = at(c.posted)
		since := map[string]time.Time{"10.5.0.2": runningSince(&machineapi.ServiceInfo{Id: "kubelet", State: "Running", Events: &machineapi.ServiceEvents{Events: c.events}})}

		if p := checkNodes(nodes, []string{"10.5.0.2"}, since); p != c.want {
			t.Errorf("%s: problems %q, want %q", c.name, p, c.want)
		}
	}
}

// lastHeartbeatTime has whole seconds: a status posted in the second the
// kubelet started may be its own, one from the second before is not.
func TestPostedBeforeWholeSeconds(t *testing.T) {
	t.Parallel()

	since := time.Date(2026, 11, 28, 15, 3, 10, 700_000_000, time.UTC)

	for _, c := range []struct {
		posted time.Time
		want   bool
	}{
		{since.Truncate(time.Second), false},
		{since.Add(-200 * time.Millisecond), false}, // same second, should the time carry a fraction
		{since.Truncate(time.Second).Add(-time.Nanosecond), true},
		{since.Add(-time.Second), true},
		{time.Time{}, false},
	} {
		if got := postedBefore(c.posted, since); got != c.want {
			t.Errorf("postedBefore(%s, %s) = %v, want %v", c.posted.Format(time.RFC3339Nano), since.Format(time.RFC3339Nano), got, c.want)
		}
	}
}
