package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snug-dev/snug/internal/trace"
)

var qosT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func qosSample(sec int, pod, uid, qos string, cpuDesired, cpuActual int64, restarts int32) trace.Sample {
	mem := int64(64 << 20)
	actual := trace.Resources{CPURequestMillis: cpuActual, CPULimitMillis: cpuActual, MemoryRequestBytes: mem, MemoryLimitBytes: mem}
	return trace.Sample{
		At: qosT0.Add(time.Duration(sec) * time.Second), Pod: pod, UID: uid, QOSClass: qos,
		Containers: []trace.Container{{
			Name:         "app",
			Desired:      trace.Resources{CPURequestMillis: cpuDesired, CPULimitMillis: cpuDesired, MemoryRequestBytes: mem, MemoryLimitBytes: mem},
			Actual:       &actual,
			RestartCount: restarts,
		}},
	}
}

func TestSummarizeQoS(t *testing.T) {
	const a, b, c = "aaaaaaaa-1", "bbbbbbbb-2", "cccccccc-3"
	inProgress := qosSample(3, "qos-x-b", b, "Guaranteed", 400, 100, 0)
	inProgress.Conditions = []trace.Condition{{Type: "PodResizeInProgress", Status: "True"}}
	gone := qosSample(60, "qos-x-b", b, "Guaranteed", 100, 100, 0)
	gone.Deleted = true
	for _, tc := range []struct {
		name    string
		samples []trace.Sample
		events  []trace.Event
		want    QoSSummary
	}{
		{
			name: "both resized in place",
			samples: []trace.Sample{
				qosSample(0, "qos-x-a", a, "Guaranteed", 100, 100, 0), qosSample(0, "qos-x-b", b, "Guaranteed", 100, 100, 0),
				qosSample(4, "qos-x-a", a, "Guaranteed", 400, 400, 0), qosSample(5, "qos-x-b", b, "Guaranteed", 400, 400, 0),
			},
			want: QoSSummary{Pods: 2, ResizedInPlace: 2, QoSClasses: []string{"Guaranteed"}, CPUBefore: "100m/100m", CPUAfter: "400m/400m", SameUIDs: true},
		},
		{
			name: "a resize in progress does not count",
			samples: []trace.Sample{
				qosSample(0, "qos-x-a", a, "Guaranteed", 100, 100, 0), qosSample(0, "qos-x-b", b, "Guaranteed", 100, 100, 0),
				qosSample(4, "qos-x-a", a, "Guaranteed", 400, 400, 0), inProgress,
			},
			want: QoSSummary{Pods: 2, ResizedInPlace: 1, QoSClasses: []string{"Guaranteed"}, CPUBefore: "100m/100m", CPUAfter: "400m/400m", SameUIDs: true},
		},
		{
			name: "evicted and replaced",
			samples: []trace.Sample{
				qosSample(0, "qos-x-a", a, "Guaranteed", 100, 100, 0), qosSample(0, "qos-x-b", b, "Guaranteed", 100, 100, 0),
				gone, qosSample(62, "qos-y-c", c, "Burstable", 100, 100, 0),
			},
			events: []trace.Event{{At: qosT0.Add(59 * time.Second), Pod: "qos-x-b", PodUID: b, Reason: "EvictedByVPA", Source: "vpa-updater"}},
			want: QoSSummary{Pods: 2, Replaced: 1, NewPods: 1, Evictions: 1, QoSClasses: []string{"Burstable", "Guaranteed"},
				CPUBefore: "100m/100m", CPUAfter: "100m/100m"},
		},
		{
			name: "a restart is seen",
			samples: []trace.Sample{
				qosSample(0, "qos-x-a", a, "Guaranteed", 100, 100, 0), qosSample(0, "qos-x-b", b, "Guaranteed", 100, 100, 0),
				qosSample(9, "qos-x-a", a, "Guaranteed", 100, 100, 1),
			},
			want: QoSSummary{Pods: 2, MaxRestarts: 1, QoSClasses: []string{"Guaranteed"}, CPUBefore: "100m/100m", CPUAfter: "100m/100m", SameUIDs: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &trace.Recording{Started: qosT0, Samples: tc.samples, Events: tc.events}
			got := SummarizeQoS(rec, []string{a, b})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQoSTimeline(t *testing.T) {
	const a = "aaaaaaaa-1"
	pendingSample := qosSample(2, "qos-x-a", a, "Guaranteed", 400, 100, 0)
	pendingSample.Conditions = []trace.Condition{{Type: "PodResizeInProgress", Status: "True"}}
	rec := &trace.Recording{
		Started: qosT0,
		Samples: []trace.Sample{
			qosSample(-1, "qos-x-a", a, "Guaranteed", 100, 100, 0),
			qosSample(0, "qos-x-a", a, "Guaranteed", 100, 100, 0), // unchanged: no row
			pendingSample,
			qosSample(3, "qos-x-a", a, "Guaranteed", 400, 400, 0),
		},
		Events: []trace.Event{{At: qosT0.Add(2500 * time.Millisecond), Pod: "qos-x-a", PodUID: a, Reason: "ResizeCompleted", Source: "kubelet", Message: "Pod resize completed:\n cpu"}},
		Marks:  []trace.Mark{{At: qosT0, Name: "load step cpu=400m"}},
	}
	got := QoSTimeline(rec, qosT0)
	want := []string{
		"t  -1.0s  a (uid aaaaaaaa)       Guaranteed   100m/100m 64Mi/64Mi      100m/100m 64Mi/64Mi      0         -  [new pod]",
		"t  +0.0s  -- load step cpu=400m",
		"t  +2.0s  a (uid aaaaaaaa)       Guaranteed   400m/400m 64Mi/64Mi      100m/100m 64Mi/64Mi      0         InProgress",
		"t  +2.5s  a (uid aaaaaaaa)       event ResizeCompleted (kubelet): Pod resize completed: cpu",
		"t  +3.0s  a (uid aaaaaaaa)       Guaranteed   400m/400m 64Mi/64Mi      400m/400m 64Mi/64Mi      0         -",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(QoSTimelineHeader, "t ") {
		t.Errorf("header %q", QoSTimelineHeader)
	}
}

func TestQoSWorkloadIsGuaranteed(t *testing.T) {
	d := QoSWorkload("/load").Build()
	r := d.Spec.Template.Spec.Containers[0].Resources
	if !r.Requests.Cpu().Equal(*r.Limits.Cpu()) || !r.Requests.Memory().Equal(*r.Limits.Memory()) {
		t.Errorf("requests %v != limits %v: not Guaranteed", r.Requests, r.Limits)
	}
	if *d.Spec.Replicas != QoSReplicas {
		t.Errorf("replicas %d", *d.Spec.Replicas)
	}
}
