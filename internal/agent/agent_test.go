package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/snug-dev/snug/internal/agent/agenttest"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// testNode is a synthetic node with an agent on a fake clock.
type testNode struct {
	root  string
	pods  []*corev1.Pod
	clock *clocktesting.FakeClock
	agent *Agent
}

func newTestNode(t *testing.T, layout string, n int, mod func(*Config)) *testNode {
	t.Helper()
	root := t.TempDir()
	pods, err := agenttest.WriteSyntheticNode(root, layout, n)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig()
	cfg.Node = "synthetic"
	cfg.CgroupRoot = root
	if mod != nil {
		mod(&cfg)
	}
	fc := clocktesting.NewFakeClock(t0)
	a, err := New(cfg, fc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.closeAll)
	return &testNode{root: root, pods: pods, clock: fc, agent: a}
}

// setCPU rewrites the container's cumulative CPU usage and throttling.
func (n *testNode) setCPU(t *testing.T, i int, layout string, usageMicros, periods, throttled uint64) {
	t.Helper()
	id := strings.TrimPrefix(n.pods[i].Status.ContainerStatuses[0].ContainerID, "containerd://")
	rel := filepath.Join("kubepods", "burstable", "pod"+string(n.pods[i].UID), id)
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if layout == "v2" {
		write(filepath.Join(n.root, rel, "cpu.stat"), fmt.Sprintf("usage_usec %d\nuser_usec 0\nsystem_usec 0\nnr_periods %d\nnr_throttled %d\nthrottled_usec 0\n", usageMicros, periods, throttled))
		return
	}
	write(filepath.Join(n.root, "cpuacct", rel, "cpuacct.usage"), fmt.Sprintf("%d\n", usageMicros*1000))
	write(filepath.Join(n.root, "cpu", rel, "cpu.stat"), fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time 0\n", periods, throttled))
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"defaults", func(*Config) {}, ""},
		{"fastest", func(c *Config) { c.Interval = MinInterval }, ""},
		{"too fast", func(c *Config) { c.Interval = 100 * time.Millisecond }, "interval 100ms is out of range [250ms, 10s]"},
		{"too slow", func(c *Config) { c.Interval = 11 * time.Second }, "interval 11s is out of range"},
		{"no history", func(c *Config) { c.HistorySize = 0 }, "history size 0 is out of range"},
		{"no root", func(c *Config) { c.CgroupRoot = "" }, "cgroup root is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfig()
			tc.mod(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestPassDerivesSignals(t *testing.T) {
	for _, layout := range []string{"v1", "v2"} {
		t.Run(layout, func(t *testing.T) {
			n := newTestNode(t, layout, 3, nil)
			ctx := context.Background()
			for _, p := range n.pods {
				n.agent.UpsertPod(p)
			}
			n.setCPU(t, 1, layout, 1_000_000, 100, 0)
			n.agent.Pass(ctx)
			vs := n.agent.Containers(Query{})
			if len(vs) != 3 {
				t.Fatalf("tracking %d containers, want 3", len(vs))
			}
			if vs[1].Latest.HasRate {
				t.Errorf("first point has a rate: %+v", vs[1].Latest)
			}

			// 300 ms of CPU and 5 of 10 periods throttled in one second.
			n.setCPU(t, 1, layout, 1_300_000, 110, 5)
			n.clock.Step(time.Second)
			n.agent.Pass(ctx)
			v, ok := n.agent.Container("bench", "pod-001", "app", Query{})
			if !ok {
				t.Fatal("pod-001/app not tracked")
			}
			got := v.Latest
			if !got.HasRate || got.CPUUsageMillicores != 300 || got.CPUThrottledFraction != 0.5 {
				t.Errorf("latest = rate %v, %v millicores, throttled %v; want rate, 300, 0.5", got.HasRate, got.CPUUsageMillicores, got.CPUThrottledFraction)
			}
			if got.MemoryWorkingSetBytes == 0 || got.MemoryWorkingSetBytes >= got.MemoryUsageBytes {
				t.Errorf("working set %d, usage %d: want 0 < working set < usage", got.MemoryWorkingSetBytes, got.MemoryUsageBytes)
			}
			if len(v.History) != 2 || !v.History[1].Time.Equal(t0.Add(time.Second)) {
				t.Errorf("history = %d points ending %v, want 2 ending %v", len(v.History), v.History[len(v.History)-1].Time, t0.Add(time.Second))
			}
		})
	}
}

func TestHistoryIsBounded(t *testing.T) {
	n := newTestNode(t, "v2", 1, func(c *Config) { c.HistorySize = 4 })
	n.agent.UpsertPod(n.pods[0])
	for range 10 {
		n.agent.Pass(context.Background())
		n.clock.Step(time.Second)
	}
	v, _ := n.agent.Container("bench", "pod-000", "app", Query{})
	if len(v.History) != 4 {
		t.Fatalf("history holds %d points, want 4", len(v.History))
	}
	for i, p := range v.History {
		if want := t0.Add(time.Duration(6+i) * time.Second); !p.Time.Equal(want) {
			t.Errorf("point %d at %v, want %v", i, p.Time, want)
		}
	}
	if got := n.agent.Containers(Query{Limit: 2})[0].History; len(got) != 2 || !got[1].Time.Equal(t0.Add(9*time.Second)) {
		t.Errorf("limit 2 gave %d points", len(got))
	}
	if got := n.agent.Containers(Query{Since: t0.Add(8 * time.Second)})[0].History; len(got) != 1 {
		t.Errorf("since 8s gave %d points, want 1", len(got))
	}
}

func TestRingAppendRecent(t *testing.T) {
	r := newRing(3)
	if _, ok := r.latest(); ok {
		t.Fatal("empty ring has a latest point")
	}
	at := func(s int) Point {
		var p Point
		p.Time = t0.Add(time.Duration(s) * time.Second)
		return p
	}
	secs := func(ps []Point) []int {
		var out []int
		for _, p := range ps {
			out = append(out, int(p.Time.Sub(t0)/time.Second))
		}
		return out
	}
	for s := 1; s <= 5; s++ {
		r.push(at(s))
	}
	for _, tc := range []struct {
		since, limit int
		want         string
	}{
		{0, 0, "[3 4 5]"}, {0, 2, "[4 5]"}, {4, 0, "[5]"}, {2, 0, "[3 4 5]"}, {5, 0, "[]"}, {0, 10, "[3 4 5]"},
	} {
		var since int64
		if tc.since > 0 {
			since = t0.Add(time.Duration(tc.since) * time.Second).UnixNano()
		}
		if got := fmt.Sprint(secs(r.appendRecent(nil, since, tc.limit))); got != tc.want && !(tc.want == "[]" && got == "[]") {
			t.Errorf("since %d limit %d: got %s, want %s", tc.since, tc.limit, got, tc.want)
		}
	}
}

func TestDroppedContainersLeaveAPIAndMetrics(t *testing.T) {
	n := newTestNode(t, "v1", 2, nil)
	ctx := context.Background()
	for _, p := range n.pods {
		n.agent.UpsertPod(p)
	}
	n.agent.Pass(ctx)
	srv := httptest.NewServer(n.agent.Handler())
	defer srv.Close()

	if !strings.Contains(get(t, srv.URL+"/metrics", 200), `pod="pod-000"`) {
		t.Fatal("/metrics has no series for pod-000")
	}
	n.agent.DeletePod(n.pods[0].UID)
	// A pod whose container stopped running counts as gone too.
	stopped := n.pods[1].DeepCopy()
	stopped.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
	n.agent.UpsertPod(stopped)
	n.clock.Step(time.Second)
	n.agent.Pass(ctx)
	if vs := n.agent.Containers(Query{}); len(vs) != 0 {
		t.Fatalf("still tracking %d containers", len(vs))
	}
	m := get(t, srv.URL+"/metrics", 200)
	if strings.Contains(m, `pod="pod-000"`) || strings.Contains(m, `pod="pod-001"`) {
		t.Error("/metrics still has series of dropped pods")
	}
	if !strings.Contains(m, "snug_agent_tracked_containers 0") {
		t.Error("/metrics does not say 0 containers tracked")
	}
	get(t, srv.URL+"/snug/v1/namespaces/bench/pods/pod-000", 404)
}

func TestRestartedContainerStartsANewSeries(t *testing.T) {
	n := newTestNode(t, "v2", 1, nil)
	ctx := context.Background()
	n.agent.UpsertPod(n.pods[0])
	n.agent.Pass(ctx)
	// The runtime gives a restarted container a new ID and a new cgroup.
	restarted := n.pods[0].DeepCopy()
	newID := fmt.Sprintf("%064x", 999)
	restarted.Status.ContainerStatuses[0].ContainerID = "containerd://" + newID
	oldDir := filepath.Join(n.root, "kubepods", "burstable", "pod"+string(restarted.UID))
	if err := os.CopyFS(filepath.Join(oldDir, newID), os.DirFS(filepath.Join(oldDir, fmt.Sprintf("%064x", 1)))); err != nil {
		t.Fatal(err)
	}
	n.agent.UpsertPod(restarted)
	n.clock.Step(time.Second)
	n.agent.Pass(ctx)
	v, ok := n.agent.Container("bench", "pod-000", "app", Query{})
	if !ok || v.ContainerID != "containerd://"+newID || len(v.History) != 1 {
		t.Fatalf("after restart: tracked %v, ID %s, %d points; want the new ID with 1 point", ok, v.ContainerID, len(v.History))
	}
}

func TestMissingCgroupIsRetried(t *testing.T) {
	n := newTestNode(t, "v2", 1, nil)
	ctx := context.Background()
	early := n.pods[0].DeepCopy()
	early.Status.ContainerStatuses[0].ContainerID = "containerd://" + fmt.Sprintf("%064x", 77)
	n.agent.UpsertPod(early)
	n.agent.Pass(ctx)
	if len(n.agent.Containers(Query{})) != 0 {
		t.Fatal("tracking a container without a cgroup")
	}
	n.agent.UpsertPod(n.pods[0])
	n.agent.Pass(ctx)
	if len(n.agent.Containers(Query{})) != 1 {
		t.Fatal("not tracking the container once its cgroup exists")
	}
}

func TestAPI(t *testing.T) {
	n := newTestNode(t, "v2", 2, nil)
	srv := httptest.NewServer(n.agent.Handler())
	defer srv.Close()
	get(t, srv.URL+"/healthz", 200)
	get(t, srv.URL+"/readyz", 503)
	for _, p := range n.pods {
		n.agent.UpsertPod(p)
	}
	n.agent.SetSynced()
	for range 3 {
		n.agent.Pass(context.Background())
		n.clock.Step(time.Second)
	}
	get(t, srv.URL+"/readyz", 200)

	var list ContainerList
	if err := json.Unmarshal([]byte(get(t, srv.URL+"/snug/v1/containers?limit=2", 200)), &list); err != nil {
		t.Fatal(err)
	}
	if list.Node != "synthetic" || list.IntervalSeconds != 1 || len(list.Containers) != 2 {
		t.Fatalf("list = node %q, interval %v, %d containers", list.Node, list.IntervalSeconds, len(list.Containers))
	}
	c := list.Containers[0]
	if c.Namespace != "bench" || c.Pod != "pod-000" || c.Container != "app" || c.CgroupVersion != "v2" || c.QOSClass != "Burstable" || len(c.History) != 2 {
		t.Errorf("container = %+v", c)
	}
	l := c.Latest
	if !l.HasRate || l.CPUUsageMillicores == nil || l.MemoryLimitBytes == nil || *l.MemoryLimitBytes != 268435456 || l.Pressure == nil || l.CPULimitMillicores == nil || *l.CPULimitMillicores != 500 {
		t.Errorf("latest = %+v", l)
	}

	body := get(t, srv.URL+"/snug/v1/namespaces/bench/pods/pod-001?since=1500ms", 200)
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Containers) != 1 || list.Containers[0].Pod != "pod-001" || len(list.Containers[0].History) != 1 {
		t.Errorf("pod-001 since 1.5s: %s", body)
	}
	since := t0.Add(time.Second).Format(time.RFC3339Nano)
	if err := json.Unmarshal([]byte(get(t, srv.URL+"/snug/v1/containers?since="+since, 200)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Containers[0].History) != 1 {
		t.Errorf("since %s gave %d points, want 1", since, len(list.Containers[0].History))
	}
	get(t, srv.URL+"/snug/v1/containers?since=yesterday", 400)
	get(t, srv.URL+"/snug/v1/containers?limit=-1", 400)
	get(t, srv.URL+"/snug/v1/namespaces/bench/pods/nope", 404)
}

type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) Observe(_ context.Context, c ContainerRef, p Point) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, fmt.Sprintf("%s@%v", c, p.Time.Sub(t0)))
}

func TestRunSamplesEveryIntervalAndFeedsTheObserver(t *testing.T) {
	rec := &recorder{}
	n := newTestNode(t, "v2", 1, func(c *Config) { c.Interval = 500 * time.Millisecond; c.Observer = rec })
	n.agent.UpsertPod(n.pods[0])
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- n.agent.Run(ctx) }()
	points := func() int {
		v, _ := n.agent.Container("bench", "pod-000", "app", Query{})
		return len(v.History)
	}
	for want := 1; want <= 3; want++ {
		waitFor(t, fmt.Sprintf("%d points", want), func() bool { return points() >= want })
		if want < 3 {
			waitFor(t, "the loop's ticker", n.clock.HasWaiters)
			n.clock.Step(500 * time.Millisecond)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := "[bench/pod-000/app@0s bench/pod-000/app@500ms bench/pod-000/app@1s]"
	if got := fmt.Sprint(rec.seen); got != want {
		t.Errorf("observer saw %s, want %s", got, want)
	}
	if len(n.agent.Containers(Query{})) != 0 {
		t.Error("Run left containers tracked after it returned")
	}
}

// waitFor polls cond with a deadline; the loop runs on another goroutine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func get(t *testing.T, url string, wantCode int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantCode {
		t.Fatalf("GET %s = %d %s, want %d", url, resp.StatusCode, b, wantCode)
	}
	return string(b)
}
