package loadgen

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr(v int64) *int64 { return &v }

func TestParseUpdate(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Update
		wantErr string
	}{
		{"both", "cpu=300m memory=100Mi", Update{CPUMillis: ptr(300), MemBytes: ptr(100 << 20)}, ""},
		{"cpu only", "cpu=1\n", Update{CPUMillis: ptr(1000)}, ""},
		{"memory only", "memory=104857600", Update{MemBytes: ptr(104857600)}, ""},
		{"cache", "memory=100Mi cache=64Mi", Update{MemBytes: ptr(100 << 20), CacheBytes: ptr(64 << 20)}, ""},
		{"separators", " cpu=2,memory=1Gi;\r\n", Update{CPUMillis: ptr(2000), MemBytes: ptr(1 << 30)}, ""},
		{"lines and comments", "# load\ncpu=500m # half\n\nmemory=0\n", Update{CPUMillis: ptr(500), MemBytes: ptr(0)}, ""},
		{"empty", "", Update{}, ""},
		{"blank", " \n\t\n", Update{}, ""},
		{"unknown key", "cpu=1 disk=5", Update{}, `unknown key "disk"`},
		{"not key=value", "cpu 1", Update{}, `"cpu" is not key=value`},
		{"twice", "cpu=1 cpu=2", Update{}, "cpu given twice"},
		{"bad cpu", "cpu=1x", Update{}, `parsing cpu "1x"`},
		{"bad memory", "memory=1MB", Update{}, `parsing memory "1MB"`},
		{"empty value", "memory=", Update{}, "no number"},
		{"too long", "cpu=1 " + strings.Repeat(" ", maxSpecBytes), Update{}, "more than 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseUpdate(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseUpdate() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseUpdate() error = %v", err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParseUpdate() (-want +got):\n%s", d)
			}
		})
	}
}

func TestUpdateApply(t *testing.T) {
	cur := Targets{CPUMillis: 100, MemBytes: 200}
	tests := []struct {
		u    Update
		want Targets
	}{
		{Update{}, cur},
		{Update{CPUMillis: ptr(5)}, Targets{5, 200, 0}},
		{Update{MemBytes: ptr(0)}, Targets{100, 0, 0}},
		{Update{CPUMillis: ptr(1), MemBytes: ptr(2)}, Targets{1, 2, 0}},
		{Update{CacheBytes: ptr(3)}, Targets{100, 200, 3}},
	}
	for _, tt := range tests {
		if got := tt.u.Apply(cur); got != tt.want {
			t.Errorf("%+v.Apply(%v) = %v, want %v", tt.u, cur, got, tt.want)
		}
	}
	if got, want := (Targets{300, 100 << 20, 0}).String(), "cpu=300m memory=100Mi"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := (Targets{300, 100 << 20, 64 << 20}).String(), "cpu=300m memory=100Mi cache=64Mi"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
