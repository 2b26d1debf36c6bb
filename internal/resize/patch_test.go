package resize

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestRevert(t *testing.T) {
	actual := func(cpu, mem string) *corev1.ResourceRequirements {
		rr := ctr("x", cpu, mem).Resources
		return &rr
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		want      string
		wantState map[string]string // container -> summary after the patch
		wantErr   bool
	}{
		{
			name: "infeasible cpu back to actual",
			pod: newPod("web").with(ctr("app", "2500m/5", "128Mi/256Mi")).
				statusAs("app", rl("cpu=250m", "memory=128Mi"), actual("250m/500m", "128Mi/256Mi")).get(),
			want: `[{"op":"test","path":"/spec/containers/0/name","value":"app"},` +
				`{"op":"test","path":"/spec/containers/0/resources/requests/cpu","value":"2500m"},` +
				`{"op":"test","path":"/spec/containers/0/resources/limits/cpu","value":"5"},` +
				`{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":"250m"},` +
				`{"op":"replace","path":"/spec/containers/0/resources/limits/cpu","value":"500m"}]`,
			wantState: map[string]string{"app": "cpu=250m/500m memory=128Mi/256Mi"},
		},
		{
			name: "sidecar reverted, settled container untouched",
			pod: newPod("web").sidecar(ctr("mesh", "1", "")).with(ctr("app", "100m", "")).
				statusAs("mesh", rl("cpu=100m"), actual("100m", "")).get(),
			wantState: map[string]string{"app": "cpu=100m/- memory=-/-", "mesh": "cpu=100m/- memory=-/-"},
		},
		{
			name: "nothing to revert",
			pod:  burstable(),
		},
		{
			name: "containers without actual resources are left alone",
			pod: newPod("web").with(ctr("app", "1", "")).
				statusAs("app", rl("cpu=100m"), nil).get(),
		},
		{
			name: "reverting would remove a limit",
			pod: newPod("web").with(ctr("app", "100m/1", "")).
				statusAs("app", rl("cpu=100m"), actual("100m", "")).get(),
			wantErr: true,
		},
		{
			name: "reverting would change the QoS class",
			pod: newPod("web").with(ctr("app", "1/1", "1Gi/1Gi")).
				statusAs("app", rl("cpu=1", "memory=1Gi"), actual("500m/1", "1Gi/1Gi")).get(),
			wantErr: true,
		},
		{name: "no pod", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := Revert(tc.pod)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Revert() error = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if tc.want != "" {
				if diff := cmp.Diff(tc.want, string(patch)); diff != "" {
					t.Errorf("patch (-want +got):\n%s", diff)
				}
			}
			if tc.wantState == nil {
				if patch != nil {
					t.Errorf("Revert() = %s, want no patch", patch)
				}
				return
			}
			checkPatchShape(t, patch)
			got := patched(t, tc.pod, patch)
			state := map[string]string{}
			for _, c := range append(got.Spec.Containers, got.Spec.InitContainers...) {
				state[c.Name] = summary(c.Resources)
			}
			if diff := cmp.Diff(tc.wantState, state); diff != "" {
				t.Errorf("reverted resources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildPatchRefusesRemoval(t *testing.T) {
	cur := ctr("app", "100m/200m", "").Resources
	next := ctr("app", "100m", "").Resources
	if _, err := buildPatch([]containerEdit{{base: "/spec/containers/0", name: "app", cur: cur, next: next}}); err == nil {
		t.Fatal("buildPatch() removed a limit without an error")
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{"cpu": "cpu", "example.com/gpu": "example.com~1gpu", "a~b": "a~0b", "~/": "~0~1"} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMulDiv(t *testing.T) {
	const max = int64(^uint64(0) >> 1)
	tests := []struct{ a, b, c, ceil, floor int64 }{
		{333, 150, 100, 500, 499},
		{10, 10, 10, 10, 10},
		{0, 7, 3, 0, 0},
		{1 << 40, 1 << 40, 1 << 40, 1 << 40, 1 << 40},
		{max, max, 1, max, max},
	}
	for _, tc := range tests {
		if got := mulDivCeil(tc.a, tc.b, tc.c); got != tc.ceil {
			t.Errorf("mulDivCeil(%d, %d, %d) = %d, want %d", tc.a, tc.b, tc.c, got, tc.ceil)
		}
		if got := mulDivFloor(tc.a, tc.b, tc.c); got != tc.floor {
			t.Errorf("mulDivFloor(%d, %d, %d) = %d, want %d", tc.a, tc.b, tc.c, got, tc.floor)
		}
	}
	if got := scaleCeil(max, 2); got != max {
		t.Errorf("scaleCeil saturates at %d, got %d", max, got)
	}
}
