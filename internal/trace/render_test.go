package trace

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; run go test -update to accept):\n%s", path, diff)
	}
}

func TestRecordingJSONGolden(t *testing.T) {
	rec := deferredRecording()
	var buf bytes.Buffer
	if err := rec.Save(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "deferred.json", buf.Bytes())
	back, err := Load(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, back); diff != "" {
		t.Errorf("recording changed through JSON (-saved +loaded):\n%s", diff)
	}
}

func TestLoadRejects(t *testing.T) {
	for name, in := range map[string]string{
		"not json":       "hello",
		"other format":   `{"format": 2, "started": "2026-12-01T02:00:00Z"}`,
		"no start":       `{"format": 1}`,
		"unknown fields": `{"format": 1, "started": "2026-12-01T02:00:00Z", "bogus": 1}`,
	} {
		if _, err := Load(strings.NewReader(in)); err == nil {
			t.Errorf("%s: Load accepted %q", name, in)
		}
	}
}

func TestTableGolden(t *testing.T) {
	rec := deferredRecording()
	var buf bytes.Buffer
	if err := WriteTable(&buf, rec, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "deferred.table.txt", buf.Bytes())
	for _, want := range []string{
		"desired cpu 100m/200m -> 400m/800m",
		"+PodResizePending Deferred (gen 2): Node didn't have enough resource",
		"event ResizeDeferred [kubelet]",
		"actual cpu 100m/200m -> 400m/800m",
		"restarts 0 -> 1",
		"mark: filler deleted",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table does not mention %q", want)
		}
	}
}

func TestTableFromMark(t *testing.T) {
	rec := deferredRecording()
	origin, err := rec.Origin("filler deleted")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, rec, TableOptions{Origin: origin, OriginName: "mark filler deleted"}); err != nil {
		t.Fatal(err)
	}
	golden(t, "deferred.from-mark.table.txt", buf.Bytes())
}

func TestCSVGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCSV(&buf, deferredRecording(), t0); err != nil {
		t.Fatal(err)
	}
	golden(t, "deferred.csv", buf.Bytes())
}

func TestSVGGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, deferredRecording(), SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "deferred.svg", buf.Bytes())
}

// TestSVGParses reads the picture as XML and checks that it has what a
// reader needs: a title, a legend naming every line and span, two panels,
// the shaded spans and the restart.
func TestSVGParses(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, deferredRecording(), SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	var texts []string
	counts := map[string]int{}
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Space + " " + el.Name.Local
			}
			counts[el.Name.Local]++
		case xml.CharData:
			if s := strings.TrimSpace(string(el)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("root element %q, want svg in the SVG namespace", root)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{
		"snug trace: pod demo/app-1",
		"desired request (spec)", "allocated request (kubelet)", "actual request (status)", "usage",
		"Deferred", "Infeasible", "InProgress", "Error", "restart",
		"app-1 / app — cpu (millicores)", "app-1 / app — memory",
		"restart #1", "ResizeDeferred", "ResizeCompleted",
		"Node didn't have enough resource: cpu, requested: 400, used: 1700, capacity: 2000",
		"desired 400m", "actual 400m",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the SVG has no text %q", want)
		}
	}
	if counts["path"] < 10 {
		t.Errorf("%d paths, want the step lines of two panels", counts["path"])
	}
}

func TestOrigin(t *testing.T) {
	rec := deferredRecording()
	for name, want := range map[string]float64{
		"":                0,
		"start":           0,
		"change":          1.62,
		"filler deleted":  6.2,
		"ResizeCompleted": 7.75,
	} {
		got, err := rec.Origin(name)
		if err != nil {
			t.Errorf("Origin(%q): %v", name, err)
			continue
		}
		if !got.Equal(at(want)) {
			t.Errorf("Origin(%q) = t+%s, want t+%.2fs", name, got.Sub(t0), want)
		}
	}
	if _, err := rec.Origin("nothing"); err == nil {
		t.Error("Origin(nothing) found something")
	}
}

func TestSpansAndRestarts(t *testing.T) {
	rec := deferredRecording()
	tracks := rec.Pods()
	if len(tracks) != 1 {
		t.Fatalf("%d pods, want 1", len(tracks))
	}
	spans := tracks[0].Spans(rec.End())
	var got []string
	for _, s := range spans {
		got = append(got, string(s.Kind)+" "+s.From.Sub(t0).String()+"-"+s.To.Sub(t0).String())
	}
	want := []string{"Deferred 1.81s-7.31s", "InProgress 7.31s-7.72s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	var resizes []string
	for _, rz := range tracks[0].Resizes() {
		resizes = append(resizes, fmt.Sprintf("%s %s %d->%d asked %s allocated %s actual %s", rz.Container, rz.Resource, rz.From, rz.To,
			rz.AskedAt.Sub(t0), rz.AllocatedAt.Sub(t0), rz.ActualAt.Sub(t0)))
	}
	if diff := cmp.Diff([]string{"app cpu 100->400 asked 1.62s allocated 7.31s actual 7.72s"}, resizes); diff != "" {
		t.Errorf("resizes (-want +got):\n%s", diff)
	}
	rs := tracks[0].Restarts()
	if len(rs) != 1 || !rs[0].At.Equal(at(9.4)) || rs[0].Count != 1 {
		t.Errorf("restarts %+v, want one at t+9.4s with count 1", rs)
	}
}

func TestEventMessage(t *testing.T) {
	for in, want := range map[string]string{
		`Pod resize Deferred: {"containers":[{"name":"app","resources":{"limits":{"cpu":"400m","memory":"32Mi"},"requests":{"cpu":"400m","memory":"32Mi"}}}],"generation":2,"error":"Node didn't have enough resource: cpu, requested: 400, used: 1700, capacity: 2000"}`: "Pod resize Deferred: app cpu 400m/400m mem 32Mi/32Mi, gen 2: Node didn't have enough resource: cpu, requested: 400, used: 1700, capacity: 2000",
		`Pod resize completed: {"containers":[{"name":"app","resources":{"requests":{"cpu":"200m"}}}],"generation":3}`:                                                                                                                                                    "Pod resize completed: app cpu 200m/-, gen 3",
		"Started container app":    "Started container app",
		"odd: {not json":           "odd: {not json",
		`other: {"containers":[]}`: `other: {"containers":[]}`,
	} {
		if got := eventMessage(in); got != want {
			t.Errorf("eventMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShownEventsDropsRepeats(t *testing.T) {
	evs := []Event{
		{Pod: "a", Reason: "MissingClusterDNS", Count: 1},
		{Pod: "a", Reason: "ResizeDeferred", Count: 1, Resize: true},
		{Pod: "a", Reason: "MissingClusterDNS", Count: 2},
		{Pod: "a", Reason: "ResizeDeferred", Count: 2, Resize: true},
		{Pod: "b", Reason: "MissingClusterDNS", Count: 1},
	}
	var got []string
	for _, e := range shownEvents(evs) {
		got = append(got, fmt.Sprintf("%s %s x%d", e.Pod, e.Reason, e.Count))
	}
	want := []string{"a MissingClusterDNS x1", "a ResizeDeferred x1", "a ResizeDeferred x2", "b MissingClusterDNS x1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shown events (-want +got):\n%s", diff)
	}
}

func TestSelectorGolden(t *testing.T) {
	rec := selectorRecording()
	var tbl, svg bytes.Buffer
	if err := WriteTable(&tbl, rec, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "selector.table.txt", tbl.Bytes())
	if err := WriteSVG(&svg, rec, SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "selector.svg", svg.Bytes())
	for _, want := range []string{
		"; +PodResizePending Infeasible (gen 2)",
		"; +PodResizeInProgress Error (gen 3): memory limit (32Mi) below usage (40Mi); -PodResizePending",
		"web-a: event EvictedByVPA [kubelet]",
		"web-a: deletion requested",
		"web-a: pod deleted",
		"web-b: pod web-b joined",
	} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table does not mention %q", want)
		}
	}
	for _, want := range []string{">Infeasible<", ">Error<", ">pod deleted<", "EvictedByVPA"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("svg has no %q", want)
		}
	}
}
