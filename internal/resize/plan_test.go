package resize

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type planCase struct {
	name   string
	pod    *corev1.Pod
	wish   []ContainerWish
	usage  map[string]Usage
	node   corev1.ResourceList // nil: bigNode; use noNode for none
	others corev1.ResourceList
	// reserve is Input.Reserve (PreemptionReserve).
	reserve corev1.ResourceList
	ns      *Namespace
	opts    Options

	want          map[string]string // container -> summary of new values
	wantReason    Reason
	wantAdj       []Adjustment
	wantPredicted Prediction // zero: WouldApply
	wantRestarts  []string
}

var noNode = corev1.ResourceList{"none": {}}

func runPlanCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pod: tc.pod, Wish: Wish{Containers: tc.wish}, Usage: tc.usage, OthersClaimed: tc.others, Reserve: tc.reserve, Namespace: tc.ns, Options: tc.opts}
			switch {
			case tc.node == nil:
				in.NodeAllocatable = bigNode
			case tc.node["none"] == noNode["none"] && len(tc.node) == 1:
			default:
				in.NodeAllocatable = tc.node
			}
			plan, err := NewPlan(in)
			checkResult(t, in, plan, err)
			if tc.wantReason != "" {
				var r *Refusal
				if !errors.As(err, &r) {
					t.Fatalf("NewPlan() = plan %v, want refusal %s", planSummary(plan), tc.wantReason)
				}
				if r.Error() != r.Message {
					t.Errorf("Error() = %q, want the message %q", r.Error(), r.Message)
				}
				if r.Reason != tc.wantReason {
					t.Fatalf("refusal reason = %s (%s), want %s", r.Reason, r.Message, tc.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewPlan() refused: %v", err)
			}
			want := tc.want
			if want == nil {
				want = map[string]string{}
			}
			if diff := cmp.Diff(want, planSummary(plan)); diff != "" {
				t.Errorf("new resources (-want +got):\n%s\nnotes: %v", diff, plan.Notes)
			}
			for _, n := range plan.Notes {
				if n.String() != n.Message || n.Message == "" {
					t.Errorf("note %+v has no message", n)
				}
			}
			if diff := cmp.Diff(tc.wantAdj, adjustments(plan.Notes)); diff != "" {
				t.Errorf("adjustments (-want +got):\n%s\nnotes: %v", diff, plan.Notes)
			}
			wantPred := tc.wantPredicted
			if wantPred == 0 {
				wantPred = WouldApply
			}
			if plan.Predicted != wantPred {
				t.Errorf("predicted %s, want %s", plan.Predicted, wantPred)
			}
			if diff := cmp.Diff(tc.wantRestarts, plan.Restarts()); diff != "" {
				t.Errorf("restarts (-want +got):\n%s", diff)
			}
		})
	}
}

// burstable is one container app: cpu 100m/200m, memory 128Mi/256Mi.
func burstable(opts ...func(*corev1.Container)) *corev1.Pod {
	return newPod("web").with(ctr("app", "100m/200m", "128Mi/256Mi", opts...)).get()
}

// guaranteed is one container app: cpu 500m/500m, memory 512Mi/512Mi.
func guaranteed() *corev1.Pod {
	return newPod("db").with(ctr("app", "500m/500m", "512Mi/512Mi")).get()
}

// TestNewPlanGuaranteedRequestsOnly: a Guaranteed container stays
// Guaranteed, so under RequestsOnly its limit follows its request (the field
// report's wall 4, where VPA held the limit and fell back to eviction).
func TestNewPlanGuaranteedRequestsOnly(t *testing.T) {
	wall4 := newPod("qos").with(ctr("app", "100m/100m", "64Mi/64Mi")).get()
	runPlanCases(t, []planCase{
		{
			name:    "cpu increase raises the limit with the request",
			pod:     wall4,
			wish:    []ContainerWish{aim("app", requestsOnly, "cpu=400m")},
			want:    map[string]string{"app": "cpu=400m/400m memory=64Mi/64Mi"},
			wantAdj: []Adjustment{LimitFollowsRequest},
		},
		{
			name:    "cpu decrease lowers the limit with the request",
			pod:     guaranteed(),
			wish:    []ContainerWish{aim("app", requestsOnly, "cpu=250m")},
			want:    map[string]string{"app": "cpu=250m/250m memory=512Mi/512Mi"},
			wantAdj: []Adjustment{LimitFollowsRequest},
		},
		{
			name:    "memory increase raises the limit",
			pod:     guaranteed(),
			wish:    []ContainerWish{aim("app", requestsOnly, "cpu=500m", "memory=1Gi")},
			want:    map[string]string{"app": "cpu=500m/500m memory=1Gi/1Gi"},
			wantAdj: []Adjustment{LimitFollowsRequest},
		},
		{
			name:       "memory limit never lowered without usage",
			pod:        guaranteed(),
			wish:       []ContainerWish{aim("app", requestsOnly, "memory=256Mi")},
			wantReason: ReasonUsageUnknown,
		},
		{
			name:    "memory decrease stops above usage, limit included",
			pod:     guaranteed(),
			wish:    []ContainerWish{aim("app", requestsOnly, "memory=256Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 400 << 20}},
			want:    map[string]string{"app": "cpu=500m/500m memory=480Mi/480Mi"},
			wantAdj: []Adjustment{KeptAboveUsage, LimitFollowsRequest},
		},
		{
			name:    "maxAllowed bounds request and limit",
			pod:     wall4,
			wish:    []ContainerWish{aim("app", &Policy{ControlledValues: RequestsOnly, MaxAllowed: rl("cpu=250m")}, "cpu=400m")},
			want:    map[string]string{"app": "cpu=250m/250m memory=64Mi/64Mi"},
			wantAdj: []Adjustment{CappedToMaxAllowed, LimitFollowsRequest},
		},
		{
			name: "one container of several moves, the pod stays guaranteed",
			pod: newPod("qos").with(
				ctr("app", "100m/100m", "64Mi/64Mi"),
				ctr("proxy", "50m/50m", "32Mi/32Mi"),
			).get(),
			wish:    []ContainerWish{aim("app", requestsOnly, "cpu=400m")},
			want:    map[string]string{"app": "cpu=400m/400m memory=64Mi/64Mi"},
			wantAdj: []Adjustment{LimitFollowsRequest},
		},
		{
			name:    "node room caps request and limit together",
			pod:     wall4,
			wish:    []ContainerWish{aim("app", requestsOnly, "cpu=400m")},
			node:    rl("cpu=1", "memory=8Gi"),
			others:  rl("cpu=700m"),
			opts:    Options{NoRoom: NoRoomCap},
			want:    map[string]string{"app": "cpu=300m/300m memory=64Mi/64Mi"},
			wantAdj: []Adjustment{LimitFollowsRequest, CappedToNodeRoom},
		},
		{
			name:    "a burstable pod keeps its limit",
			pod:     burstable(),
			wish:    []ContainerWish{aim("app", requestsOnly, "cpu=400m")},
			want:    map[string]string{"app": "cpu=200m/200m memory=128Mi/256Mi"},
			wantAdj: []Adjustment{CappedToLimit},
		},
	})
}

func TestNewPlanPolicy(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "burstable requests and limits keep their ratio",
			pod:  burstable(),
			wish: []ContainerWish{aim("app", nil, "cpu=250m", "memory=200Mi")},
			want: map[string]string{"app": "cpu=250m/500m memory=200Mi/400Mi"},
		},
		{
			name: "ratio rounds the limit up to whole millicores",
			pod:  newPod("web").with(ctr("app", "100m/150m", "")).get(),
			wish: []ContainerWish{aim("app", nil, "cpu=333m")},
			want: map[string]string{"app": "cpu=333m/500m memory=-/-"},
		},
		{
			name: "target rounds up to whole millicores",
			pod:  newPod("web").with(ctr("app", "100m", "")).get(),
			wish: []ContainerWish{aim("app", nil, "cpu=0.2501")},
			want: map[string]string{"app": "cpu=251m/- memory=-/-"},
		},
		{
			name:    "requests only caps at the limit and keeps the pod burstable",
			pod:     burstable(),
			wish:    []ContainerWish{aim("app", requestsOnly, "cpu=300m", "memory=300Mi")},
			want:    map[string]string{"app": "cpu=199m/200m memory=256Mi/256Mi"},
			wantAdj: []Adjustment{CappedToLimit, CappedToLimit, KeptBurstable},
		},
		{
			name:    "requests only below the limit",
			pod:     burstable(),
			wish:    []ContainerWish{aim("app", requestsOnly, "cpu=150m")},
			want:    map[string]string{"app": "cpu=150m/200m memory=128Mi/256Mi"},
			wantAdj: nil,
		},
		{
			name: "burstable pod stays burstable across containers",
			pod: newPod("web").with(
				ctr("app", "100m/200m", "128Mi/256Mi"),
				ctr("proxy", "50m/50m", "64Mi/64Mi"),
			).get(),
			wish:    []ContainerWish{aim("app", requestsOnly, "cpu=1", "memory=1Gi")},
			want:    map[string]string{"app": "cpu=199m/200m memory=256Mi/256Mi"},
			wantAdj: []Adjustment{CappedToLimit, CappedToLimit, KeptBurstable},
		},
		{
			name: "guaranteed moves requests and limits together",
			pod:  guaranteed(),
			wish: []ContainerWish{aim("app", nil, "cpu=1", "memory=1Gi")},
			want: map[string]string{"app": "cpu=1/1 memory=1Gi/1Gi"},
		},
		{
			name:       "best effort gets no requests",
			pod:        newPod("be").with(ctr("app", "", "")).get(),
			wish:       []ContainerWish{aim("app", nil, "cpu=100m")},
			wantReason: ReasonQoSChange,
		},
		{
			name: "burstable container without requests gets one",
			pod: newPod("web").with(
				ctr("app", "100m/200m", ""),
				ctr("helper", "", ""),
			).get(),
			wish: []ContainerWish{aim("helper", nil, "cpu=50m", "memory=32Mi")},
			want: map[string]string{"helper": "cpu=50m/- memory=32Mi/-"},
		},
		{
			name:    "min and max allowed clamp the target",
			pod:     burstable(),
			wish:    []ContainerWish{aim("app", &Policy{MinAllowed: rl("cpu=150m"), MaxAllowed: rl("memory=192Mi")}, "cpu=10m", "memory=1Gi")},
			want:    map[string]string{"app": "cpu=150m/300m memory=192Mi/384Mi"},
			wantAdj: []Adjustment{RaisedToMinAllowed, CappedToMaxAllowed},
		},
		{
			name:    "resources outside controlledResources are ignored",
			pod:     burstable(),
			wish:    []ContainerWish{aim("app", &Policy{ControlledResources: []corev1.ResourceName{corev1.ResourceCPU}}, "cpu=150m", "memory=1Gi")},
			want:    map[string]string{"app": "cpu=150m/300m memory=128Mi/256Mi"},
			wantAdj: []Adjustment{NotControlled},
		},
		{
			name:    "node room unchecked without allocatable",
			pod:     burstable(),
			node:    noNode,
			wish:    []ContainerWish{aim("app", nil, "cpu=150m")},
			want:    map[string]string{"app": "cpu=150m/300m memory=128Mi/256Mi"},
			wantAdj: []Adjustment{NodeRoomUnchecked},
		},
		{
			name: "sidecars can be resized",
			pod: newPod("web").with(ctr("app", "100m/200m", "")).
				sidecar(ctr("mesh", "50m/100m", "")).get(),
			wish: []ContainerWish{aim("mesh", nil, "cpu=100m")},
			want: map[string]string{"mesh": "cpu=100m/200m memory=-/-"},
		},
		{
			name: "a target equal to the current values is a no-op",
			pod:  burstable(),
			wish: []ContainerWish{aim("app", nil, "cpu=100m", "memory=128Mi")},
		},
	})
}

func TestNewPlanMemory(t *testing.T) {
	gib := newPod("mem").with(ctr("app", "100m", "1Gi/2Gi")).get()
	guaranteedGi := newPod("mem").with(ctr("app", "1/1", "1Gi/1Gi")).get()
	requestOnly := newPod("mem").with(ctr("app", "100m", "1Gi")).get()
	runPlanCases(t, []planCase{
		{
			name:    "decrease limited to one step",
			pod:     gib,
			wish:    []ContainerWish{aim("app", nil, "memory=512Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 600 << 20}},
			want:    map[string]string{"app": "cpu=100m/- memory=768Mi/1536Mi"},
			wantAdj: []Adjustment{DecreaseStepLimited},
		},
		{
			name:    "decrease stops at usage plus headroom",
			pod:     gib,
			wish:    []ContainerWish{aim("app", nil, "memory=800Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 700 << 20}},
			want:    map[string]string{"app": "cpu=100m/- memory=840Mi/1680Mi"},
			wantAdj: []Adjustment{KeptAboveUsage},
		},
		{
			name:    "peak working set counts as usage",
			pod:     gib,
			wish:    []ContainerWish{aim("app", nil, "memory=800Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 100 << 20, MemoryPeakBytes: 900 << 20}},
			wantAdj: []Adjustment{KeptAboveUsage},
		},
		{
			name:    "custom headroom and step",
			pod:     gib,
			wish:    []ContainerWish{aim("app", nil, "memory=100Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 200 << 20}},
			opts:    Options{MemoryHeadroom: 0.5, MaxMemoryDecreaseFraction: 0.9},
			want:    map[string]string{"app": "cpu=100m/- memory=300Mi/600Mi"},
			wantAdj: []Adjustment{KeptAboveUsage},
		},
		{
			name:    "limit floor keeps a burstable limit while the request comes down",
			pod:     gib,
			wish:    []ContainerWish{aim("app", nil, "memory=768Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 100 << 20, MemoryLimitFloorBytes: 2 << 30}},
			want:    map[string]string{"app": "cpu=100m/- memory=768Mi/2Gi"},
			wantAdj: []Adjustment{KeptAtLimitFloor},
		},
		{
			name:    "limit floor: lowered to it, not below",
			pod:     gib,
			wish:    []ContainerWish{aim("app", nil, "memory=768Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 100 << 20, MemoryLimitFloorBytes: 1800 << 20}},
			want:    map[string]string{"app": "cpu=100m/- memory=768Mi/1800Mi"},
			wantAdj: []Adjustment{KeptAtLimitFloor},
		},
		{
			name:  "limit floor leaves grows alone",
			pod:   gib,
			wish:  []ContainerWish{aim("app", nil, "memory=1536Mi")},
			usage: map[string]Usage{"app": {MemoryWorkingSetBytes: 100 << 20, MemoryLimitFloorBytes: 2 << 30}},
			want:  map[string]string{"app": "cpu=100m/- memory=1536Mi/3Gi"},
		},
		{
			name:  "limit floor does not hold a guaranteed limit: it is the request",
			pod:   guaranteedGi,
			wish:  []ContainerWish{aim("app", nil, "memory=768Mi")},
			usage: map[string]Usage{"app": {MemoryWorkingSetBytes: 100 << 20, MemoryLimitFloorBytes: 1 << 30}},
			want:  map[string]string{"app": "cpu=1/1 memory=768Mi/768Mi"},
		},
		{
			name:       "limit never lowered without usage",
			pod:        gib,
			wish:       []ContainerWish{aim("app", nil, "memory=900Mi")},
			wantReason: ReasonUsageUnknown,
		},
		{
			name:       "guaranteed memory never lowered without usage",
			pod:        guaranteedGi,
			wish:       []ContainerWish{aim("app", nil, "memory=900Mi")},
			wantReason: ReasonUsageUnknown,
		},
		{
			name:    "guaranteed memory lowered with usage",
			pod:     guaranteedGi,
			wish:    []ContainerWish{aim("app", nil, "memory=256Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 200 << 20}},
			want:    map[string]string{"app": "cpu=1/1 memory=768Mi/768Mi"},
			wantAdj: []Adjustment{DecreaseStepLimited},
		},
		{
			name:    "request lowered without usage by one step at most",
			pod:     gib,
			wish:    []ContainerWish{aim("app", requestsOnly, "memory=100Mi")},
			want:    map[string]string{"app": "cpu=100m/- memory=768Mi/2Gi"},
			wantAdj: []Adjustment{DecreaseStepLimited, LoweredWithoutUsage},
		},
		{
			name:    "request without limit lowered to usage floor",
			pod:     requestOnly,
			wish:    []ContainerWish{aim("app", nil, "memory=700Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 640 << 20}},
			want:    map[string]string{"app": "cpu=100m/- memory=768Mi/-"},
			wantAdj: []Adjustment{KeptAboveUsage},
		},
		{
			name:    "usage above the current value keeps it",
			pod:     requestOnly,
			wish:    []ContainerWish{aim("app", nil, "memory=900Mi")},
			usage:   map[string]Usage{"app": {MemoryWorkingSetBytes: 1 << 30}},
			wantAdj: []Adjustment{KeptAboveUsage},
		},
		{
			name: "increase needs no usage",
			pod:  gib,
			wish: []ContainerWish{aim("app", nil, "memory=2Gi")},
			want: map[string]string{"app": "cpu=100m/- memory=2Gi/4Gi"},
		},
		{
			name:  "explicit limit added above usage",
			pod:   requestOnly,
			wish:  []ContainerWish{exact("app", nil, rl("memory=2Gi"))},
			usage: map[string]Usage{"app": {MemoryWorkingSetBytes: 1 << 30}},
			want:  map[string]string{"app": "cpu=100m/- memory=1Gi/2Gi"},
		},
		{
			name:       "explicit limit not added without usage",
			pod:        requestOnly,
			wish:       []ContainerWish{exact("app", nil, rl("memory=2Gi"))},
			wantReason: ReasonUsageUnknown,
		},
		{
			name:       "explicit limit added below usage is raised, then above request",
			pod:        requestOnly,
			wish:       []ContainerWish{exact("app", nil, rl("memory=512Mi"))},
			usage:      map[string]Usage{"app": {MemoryWorkingSetBytes: 400 << 20}},
			wantReason: ReasonRequestAboveLimit,
		},
	})
}

func TestNewPlanExplicit(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "request only",
			pod:  burstable(),
			wish: []ContainerWish{exact("app", rl("cpu=150m"), nil)},
			want: map[string]string{"app": "cpu=150m/200m memory=128Mi/256Mi"},
		},
		{
			name: "request and limit",
			pod:  burstable(),
			wish: []ContainerWish{exact("app", rl("cpu=1"), rl("cpu=2"))},
			want: map[string]string{"app": "cpu=1/2 memory=128Mi/256Mi"},
		},
		{
			name:       "request above limit",
			pod:        burstable(),
			wish:       []ContainerWish{exact("app", rl("cpu=300m"), nil)},
			wantReason: ReasonRequestAboveLimit,
		},
		{
			name:    "equal values on a burstable pod keep it burstable",
			pod:     burstable(),
			wish:    []ContainerWish{exact("app", rl("cpu=200m", "memory=256Mi"), nil)},
			want:    map[string]string{"app": "cpu=199m/200m memory=256Mi/256Mi"},
			wantAdj: []Adjustment{KeptBurstable},
		},
		{
			name:    "memory kept one byte below when cpu cannot be",
			pod:     newPod("web").with(ctr("app", "1m/1m", "128Mi/256Mi")).get(),
			wish:    []ContainerWish{aim("app", requestsOnly, "memory=1Gi")},
			want:    map[string]string{"app": "cpu=1m/1m memory=268435455/256Mi"},
			wantAdj: []Adjustment{CappedToLimit, KeptBurstable},
		},
		{
			name:       "burstable refused when no request can stay below its limit",
			pod:        newPod("web").with(ctr("a", "1m/1m", "1/1"), ctr("b", "1m/2m", "1/1")).get(),
			wish:       []ContainerWish{exact("b", nil, rl("cpu=1m"))},
			wantReason: ReasonQoSChange,
		},
		{
			name: "guaranteed limit follows the request",
			pod:  guaranteed(),
			wish: []ContainerWish{exact("app", rl("cpu=1"), nil)},
			want: map[string]string{"app": "cpu=1/1 memory=512Mi/512Mi"},
		},
		{
			name: "guaranteed request follows the limit",
			pod:  guaranteed(),
			wish: []ContainerWish{exact("app", nil, rl("cpu=750m"))},
			want: map[string]string{"app": "cpu=750m/750m memory=512Mi/512Mi"},
		},
		{
			name:       "guaranteed request and limit must stay equal",
			pod:        guaranteed(),
			wish:       []ContainerWish{exact("app", rl("cpu=500m"), rl("cpu=1"))},
			wantReason: ReasonQoSChange,
		},
		{
			name:       "limit added without a request",
			pod:        newPod("web").with(ctr("app", "", "128Mi")).get(),
			wish:       []ContainerWish{exact("app", nil, rl("cpu=1"))},
			wantReason: ReasonKeyChange,
		},
		{
			name: "cpu limit added with its request",
			pod:  newPod("web").with(ctr("app", "100m", "128Mi")).get(),
			wish: []ContainerWish{exact("app", nil, rl("cpu=1"))},
			want: map[string]string{"app": "cpu=100m/1 memory=128Mi/-"},
		},
		{
			name:       "best effort gets no limits",
			pod:        newPod("be").with(ctr("app", "", "")).get(),
			wish:       []ContainerWish{exact("app", nil, rl("cpu=1"))},
			wantReason: ReasonQoSChange,
		},
	})
}

func TestNewPlanNodeRoom(t *testing.T) {
	pod := newPod("web").with(ctr("app", "250m/500m", "128Mi/256Mi")).get()
	node := rl("cpu=2", "memory=4Gi")
	others := rl("cpu=1400m", "memory=1Gi")
	grow := []ContainerWish{aim("app", nil, "cpu=700m")}
	huge := []ContainerWish{aim("app", nil, "cpu=2500m")}
	runPlanCases(t, []planCase{
		{name: "fits", pod: pod, node: node, others: rl("cpu=1"), wish: grow, want: map[string]string{"app": "cpu=700m/1400m memory=128Mi/256Mi"}},
		{name: "deferred refused by default", pod: pod, node: node, others: others, wish: grow, wantReason: ReasonWouldDefer},
		{
			name: "deferred sent anyway", pod: pod, node: node, others: others, wish: grow,
			opts:          Options{NoRoom: NoRoomSend},
			want:          map[string]string{"app": "cpu=700m/1400m memory=128Mi/256Mi"},
			wantAdj:       []Adjustment{NoRoomSentAnyway},
			wantPredicted: WouldDefer,
		},
		{
			name: "deferred capped to room", pod: pod, node: node, others: others, wish: grow,
			opts:    Options{NoRoom: NoRoomCap},
			want:    map[string]string{"app": "cpu=600m/1200m memory=128Mi/256Mi"},
			wantAdj: []Adjustment{CappedToNodeRoom},
		},
		{name: "infeasible refused by default", pod: pod, node: node, wish: huge, wantReason: ReasonWouldBeInfeasible},
		{
			name: "infeasible sent anyway", pod: pod, node: node, wish: huge,
			opts:          Options{NoRoom: NoRoomSend},
			want:          map[string]string{"app": "cpu=2500m/5 memory=128Mi/256Mi"},
			wantAdj:       []Adjustment{NoRoomSentAnyway},
			wantPredicted: WouldBeInfeasible,
		},
		{
			name: "infeasible capped to allocatable", pod: pod, node: node, wish: huge,
			opts:    Options{NoRoom: NoRoomCap},
			want:    map[string]string{"app": "cpu=2/4 memory=128Mi/256Mi"},
			wantAdj: []Adjustment{CappedToNodeRoom},
		},
		{
			name: "guaranteed capped together", node: node, others: others,
			pod:     newPod("db").with(ctr("app", "250m/250m", "128Mi/128Mi")).get(),
			wish:    grow,
			opts:    Options{NoRoom: NoRoomCap},
			want:    map[string]string{"app": "cpu=600m/600m memory=128Mi/128Mi"},
			wantAdj: []Adjustment{CappedToNodeRoom},
		},
		{
			name: "a decrease needs no room", pod: pod, node: node, others: rl("cpu=10"),
			wish: []ContainerWish{aim("app", nil, "cpu=100m")},
			want: map[string]string{"app": "cpu=100m/200m memory=128Mi/256Mi"},
		},
		{
			name: "init container dominates the pod total",
			pod: newPod("web").init(ctr("setup", "1500m", "")).
				with(ctr("app", "250m/500m", "")).get(),
			node: node, others: rl("cpu=400m"),
			wish: []ContainerWish{aim("app", nil, "cpu=1500m")},
			want: map[string]string{"app": "cpu=1500m/3 memory=-/-"},
		},
		{
			name: "overhead counts",
			pod:  newPod("web").with(ctr("app", "250m/500m", "")).overhead(rl("cpu=200m")).get(),
			node: node, others: rl("cpu=1400m"),
			wish:       []ContainerWish{aim("app", nil, "cpu=500m")},
			wantReason: ReasonWouldDefer,
		},
		{
			// 2 - 1 - 300m leaves 700m for the pod: the kubelet would
			// grant 1, but a higher-priority pod's replacement would
			// then preempt this one.
			name: "capped to leave the reserve", pod: pod, node: node, others: rl("cpu=1"), reserve: rl("cpu=300m"), wish: grow,
			opts:    Options{NoRoom: NoRoomCap},
			want:    map[string]string{"app": "cpu=700m/1400m memory=128Mi/256Mi"},
			wantAdj: nil,
		},
		{
			name: "grow into the reserve cut", pod: pod, node: node, others: rl("cpu=1"), reserve: rl("cpu=500m"), wish: grow,
			opts:    Options{NoRoom: NoRoomCap},
			want:    map[string]string{"app": "cpu=500m/1 memory=128Mi/256Mi"},
			wantAdj: []Adjustment{CappedToNodeRoom},
		},
		{
			name: "short of room and reserve: cut to leave both", pod: pod, node: node, others: others, reserve: rl("cpu=200m"), wish: grow,
			opts:    Options{NoRoom: NoRoomCap},
			want:    map[string]string{"app": "cpu=400m/800m memory=128Mi/256Mi"},
			wantAdj: []Adjustment{CappedToNodeRoom},
		},
		{
			name: "reserve beyond what the pod has: no increase", pod: pod, node: node, others: rl("cpu=1"), reserve: rl("cpu=900m"), wish: grow,
			opts:    Options{NoRoom: NoRoomCap},
			wantAdj: []Adjustment{CappedToNodeRoom},
		},
		{
			name: "refuse judges the kubelet's room alone", pod: pod, node: node, others: rl("cpu=1"), reserve: rl("cpu=500m"), wish: grow,
			want: map[string]string{"app": "cpu=700m/1400m memory=128Mi/256Mi"},
		},
		{
			// 4Gi - 3Gi leaves 1Gi: the kubelet's room, not less the
			// reserve (an OOM kill now is worse than a preemption later).
			name: "memory leaves no reserve", pod: pod, node: node, others: rl("cpu=1", "memory=3Gi"), reserve: rl("memory=512Mi"),
			wish:    []ContainerWish{aim("app", nil, "cpu=500m", "memory=2Gi")},
			opts:    Options{NoRoom: NoRoomCap},
			want:    map[string]string{"app": "cpu=500m/1 memory=1Gi/2Gi"},
			wantAdj: []Adjustment{CappedToNodeRoom},
		},
		{
			name: "a decrease ignores the reserve", pod: pod, node: node, others: rl("cpu=10"), reserve: rl("cpu=10"),
			opts: Options{NoRoom: NoRoomCap},
			wish: []ContainerWish{aim("app", nil, "cpu=100m")},
			want: map[string]string{"app": "cpu=100m/200m memory=128Mi/256Mi"},
		},
		{
			name: "memory capped, cpu kept", pod: pod, node: node, others: rl("cpu=1", "memory=3Gi"),
			wish:    []ContainerWish{aim("app", nil, "cpu=500m", "memory=2Gi")},
			opts:    Options{NoRoom: NoRoomCap},
			want:    map[string]string{"app": "cpu=500m/1 memory=1Gi/2Gi"},
			wantAdj: []Adjustment{CappedToNodeRoom},
		},
	})
}

func TestNewPlanRestarts(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:       "restart refused unless allowed",
			pod:        burstable(restartOn(corev1.ResourceMemory)),
			wish:       []ContainerWish{aim("app", nil, "memory=200Mi")},
			wantReason: ReasonRestartRequired,
		},
		{
			name:         "restart allowed",
			pod:          burstable(restartOn(corev1.ResourceMemory)),
			wish:         []ContainerWish{aim("app", nil, "memory=200Mi")},
			opts:         Options{AllowRestart: true},
			want:         map[string]string{"app": "cpu=100m/200m memory=200Mi/400Mi"},
			wantRestarts: []string{"app"},
		},
		{
			name: "unchanged resource does not restart",
			pod:  burstable(restartOn(corev1.ResourceMemory)),
			wish: []ContainerWish{aim("app", nil, "cpu=150m")},
			want: map[string]string{"app": "cpu=150m/300m memory=128Mi/256Mi"},
		},
		{
			name:       "restart policy never",
			pod:        newPod("job").restartNever().with(ctr("app", "100m/200m", "", restartOn(corev1.ResourceCPU))).get(),
			wish:       []ContainerWish{aim("app", nil, "cpu=150m")},
			opts:       Options{AllowRestart: true},
			wantReason: ReasonRestartImpossible,
		},
		{
			name: "restart policy never without restart policy resizes",
			pod:  newPod("job").restartNever().with(ctr("app", "100m/200m", "")).get(),
			wish: []ContainerWish{aim("app", nil, "cpu=150m")},
			want: map[string]string{"app": "cpu=150m/300m memory=-/-"},
		},
	})
}

func TestNewPlanRefusals(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	withInit := newPod("web").init(ctr("setup", "100m", "")).with(ctr("app", "100m/200m", "")).ephemeral("debug").get()
	wish := []ContainerWish{aim("app", nil, "cpu=150m")}
	cases := []planCase{
		{name: "init container", pod: withInit, wish: []ContainerWish{aim("setup", nil, "cpu=1")}, wantReason: ReasonNotResizable},
		{name: "ephemeral container", pod: withInit, wish: []ContainerWish{aim("debug", nil, "cpu=1")}, wantReason: ReasonNotResizable},
		{name: "unknown container", pod: withInit, wish: []ContainerWish{aim("nope", nil, "cpu=1")}, wantReason: ReasonUnknownContainer},
		{name: "finished", pod: newPod("p").with(ctr("app", "100m", "")).phase(corev1.PodSucceeded).get(), wish: wish, wantReason: ReasonUnsupportedPod},
		{name: "terminating", pod: newPod("p").with(ctr("app", "100m", "")).edit(func(p *corev1.Pod) { p.DeletionTimestamp = &now }).get(), wish: wish, wantReason: ReasonUnsupportedPod},
		{name: "static", pod: newPod("p").with(ctr("app", "100m", "")).edit(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		}).get(), wish: wish, wantReason: ReasonUnsupportedPod},
		{name: "windows", pod: newPod("p").with(ctr("app", "100m", "")).edit(func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		}).get(), wish: wish, wantReason: ReasonUnsupportedPod},
		{name: "pod-level resources", pod: newPod("p").with(ctr("app", "100m", "")).edit(func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu=1")}
		}).get(), wish: wish, wantReason: ReasonUnsupportedPod},
		{name: "node without resize support", pod: newPod("p").with(ctr("app", "100m", "")).statusAs("app", nil, nil).get(), wish: wish, wantReason: ReasonUnsupportedPod},
		{name: "no pod", wish: wish, wantReason: ReasonInvalidWish},
		{name: "duplicate", pod: burstable(), wish: []ContainerWish{wish[0], wish[0]}, wantReason: ReasonInvalidWish},
		{name: "nameless", pod: burstable(), wish: []ContainerWish{aim("", nil, "cpu=1")}, wantReason: ReasonInvalidWish},
		{name: "both kinds", pod: burstable(), wish: []ContainerWish{{Name: "app", Requests: rl("cpu=1"), Target: rl("cpu=1")}}, wantReason: ReasonInvalidWish},
		{name: "nothing", pod: burstable(), wish: []ContainerWish{{Name: "app"}}, wantReason: ReasonInvalidWish},
		{name: "policy without target", pod: burstable(), wish: []ContainerWish{{Name: "app", Policy: &Policy{}}}, wantReason: ReasonInvalidWish},
		{name: "zero", pod: burstable(), wish: []ContainerWish{aim("app", nil, "cpu=0")}, wantReason: ReasonInvalidWish},
		{name: "negative", pod: burstable(), wish: []ContainerWish{exact("app", rl("memory=-1Mi"), nil)}, wantReason: ReasonInvalidWish},
		{name: "other resource", pod: burstable(), wish: []ContainerWish{exact("app", rl("ephemeral-storage=1Gi"), nil)}, wantReason: ReasonInvalidWish},
		{name: "bad controlled values", pod: burstable(), wish: []ContainerWish{aim("app", &Policy{ControlledValues: "Off"}, "cpu=1")}, wantReason: ReasonInvalidWish},
		{name: "bad controlled resource", pod: burstable(), wish: []ContainerWish{aim("app", &Policy{ControlledResources: []corev1.ResourceName{"nvidia.com/gpu"}}, "cpu=1")}, wantReason: ReasonInvalidWish},
		{name: "min above max", pod: burstable(), wish: []ContainerWish{aim("app", &Policy{MinAllowed: rl("cpu=2"), MaxAllowed: rl("cpu=1")}, "cpu=1")}, wantReason: ReasonInvalidWish},
		{name: "bad options", pod: burstable(), wish: wish, opts: Options{MemoryHeadroom: -1}, wantReason: ReasonInvalidWish},
	}
	runPlanCases(t, cases)
}

func TestNewPlanPatch(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		wish ContainerWish
		want string
	}{
		{
			name: "replace with tests first",
			pod:  burstable(),
			wish: aim("app", nil, "cpu=250m", "memory=200Mi"),
			want: `[{"op":"test","path":"/spec/containers/0/name","value":"app"},` +
				`{"op":"test","path":"/spec/containers/0/resources/requests/cpu","value":"100m"},` +
				`{"op":"test","path":"/spec/containers/0/resources/requests/memory","value":"128Mi"},` +
				`{"op":"test","path":"/spec/containers/0/resources/limits/cpu","value":"200m"},` +
				`{"op":"test","path":"/spec/containers/0/resources/limits/memory","value":"256Mi"},` +
				`{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":"250m"},` +
				`{"op":"replace","path":"/spec/containers/0/resources/requests/memory","value":"200Mi"},` +
				`{"op":"replace","path":"/spec/containers/0/resources/limits/cpu","value":"500m"},` +
				`{"op":"replace","path":"/spec/containers/0/resources/limits/memory","value":"400Mi"}]`,
		},
		{
			name: "canonical quantities",
			pod:  newPod("web").with(ctr("app", "2000m", "")).get(),
			wish: aim("app", nil, "cpu=1.5"),
			want: `[{"op":"test","path":"/spec/containers/0/name","value":"app"},` +
				`{"op":"test","path":"/spec/containers/0/resources/requests/cpu","value":"2"},` +
				`{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":"1500m"}]`,
		},
		{
			name: "key added to an existing list",
			pod:  newPod("web").with(ctr("app", "100m", "")).get(),
			wish: aim("app", nil, "memory=64Mi"),
			want: `[{"op":"test","path":"/spec/containers/0/name","value":"app"},` +
				`{"op":"test","path":"/spec/containers/0/resources/requests","value":{"cpu":"100m"}},` +
				`{"op":"add","path":"/spec/containers/0/resources/requests/memory","value":"64Mi"}]`,
		},
		{
			name: "list added",
			pod:  newPod("web").with(ctr("app", "100m", ""), ctr("helper", "", "")).get(),
			wish: aim("helper", nil, "cpu=50m"),
			want: `[{"op":"test","path":"/spec/containers/1/name","value":"helper"},` +
				`{"op":"test","path":"/spec/containers/1/resources","value":{}},` +
				`{"op":"add","path":"/spec/containers/1/resources/requests","value":{"cpu":"50m"}}]`,
		},
		{
			name: "sidecar",
			pod:  newPod("web").sidecar(ctr("mesh", "50m", "")).with(ctr("app", "100m", "")).get(),
			wish: aim("mesh", nil, "cpu=75m"),
			want: `[{"op":"test","path":"/spec/initContainers/0/name","value":"mesh"},` +
				`{"op":"test","path":"/spec/initContainers/0/resources/requests/cpu","value":"50m"},` +
				`{"op":"replace","path":"/spec/initContainers/0/resources/requests/cpu","value":"75m"}]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := NewPlan(Input{Pod: tc.pod, NodeAllocatable: bigNode, Wish: Wish{Containers: []ContainerWish{tc.wish}}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(plan.Patch)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPlanConcurrentChangeFailsPatch(t *testing.T) {
	pod := burstable()
	plan, err := NewPlan(Input{Pod: pod, NodeAllocatable: bigNode, Wish: Wish{Containers: []ContainerWish{aim("app", nil, "cpu=250m")}}})
	if err != nil {
		t.Fatal(err)
	}
	moved := pod.DeepCopy()
	moved.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = rl("cpu=120m")[corev1.ResourceCPU]
	doc, _ := jsonMarshal(moved)
	if _, err := applyPatch(doc, plan.Patch); err == nil {
		t.Fatal("patch applied over a concurrent change")
	}
}

func TestNewPlanDoesNotModifyInput(t *testing.T) {
	pod := newPod("web").with(ctr("app", "100m/200m", "128Mi/256Mi"), ctr("helper", "", "")).get()
	before := pod.DeepCopy()
	_, err := NewPlan(Input{Pod: pod, NodeAllocatable: rl("cpu=1", "memory=1Gi"), OthersClaimed: rl("cpu=500m"),
		Options: Options{NoRoom: NoRoomCap},
		Wish:    Wish{Containers: []ContainerWish{aim("app", nil, "cpu=1", "memory=200Mi"), aim("helper", nil, "cpu=100m")}}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, pod); diff != "" {
		t.Errorf("NewPlan modified its input (-before +after):\n%s", diff)
	}
}

// TestCheckKeysGuards drives the key guards directly: the planner never
// produces these values itself, but a future change must not slip past them.
func TestCheckKeysGuards(t *testing.T) {
	spec := ctr("app", "100m/200m", "")
	tests := []struct {
		name string
		cur  values
		next values
		want Reason
	}{
		{"request removed", values{cpu: {req: some(100)}}, values{}, ReasonKeyChange},
		{"limit removed", values{cpu: {req: some(100), lim: some(200)}}, values{cpu: {req: some(100)}}, ReasonKeyChange},
		{"limit without request", values{}, values{cpu: {lim: some(200)}}, ReasonKeyChange},
		{"request above limit", values{cpu: {req: some(100), lim: some(200)}}, values{cpu: {req: some(300), lim: some(200)}}, ReasonRequestAboveLimit},
		{"fine", values{cpu: {req: some(100), lim: some(200)}}, values{cpu: {req: some(150), lim: some(300)}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &planner{targets: []*target{{spec: spec, cur: tc.cur, next: tc.next}}}
			r := p.checkKeys()
			got := Reason("")
			if r != nil {
				got = r.Reason
			}
			if got != tc.want {
				t.Errorf("checkKeys() = %v, want %s", r, tc.want)
			}
		})
	}
}
