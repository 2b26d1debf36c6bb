package loadgen

import (
	"strings"
	"testing"
)

func TestParseCPU(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"0", 0, ""},
		{"300m", 300, ""},
		{"1500m", 1500, ""},
		{"1", 1000, ""},
		{"1.5", 1500, ""},
		{"0.3", 300, ""},
		{".25", 250, ""},
		{"2.", 2000, ""},
		{"0.0001", 1, ""}, // rounded up, as Kubernetes does
		{"1.0005", 1001, ""},
		{"0.5m", 1, ""},
		{"0m", 0, ""},
		{"1024", 1024000, ""},
		{"1025", 0, "limit"},
		{"99999999999999999999999999", 0, "limit"},
		{"", 0, "no number"},
		{"m", 0, "no number"},
		{".", 0, "no number"},
		{"1.2.3", 0, "decimal point"},
		{"-1", 0, "suffix"},
		{"+1", 0, "suffix"},
		{"1k", 0, "suffix"},
		{"1 m", 0, "suffix"},
		{"1e3", 0, "suffix"},
		{"1Mi", 0, "suffix"},
		{"0x10", 0, "suffix"},
	}
	for _, tt := range tests {
		got, err := ParseCPU(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseCPU(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseCPU(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseMemory(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"0", 0, ""},
		{"104857600", 104857600, ""},
		{"100Mi", 100 << 20, ""},
		{"1Ki", 1024, ""},
		{"1.5Gi", 3 << 29, ""},
		{"2Ti", 0, "limit"},
		{"1Ti", 1 << 40, ""},
		{"1k", 1000, ""},
		{"500M", 500e6, ""},
		{"1G", 1e9, ""},
		{"1T", 1e12, ""},
		{"0.5", 1, ""},
		{"1.0001Ki", 1025, ""},
		{"", 0, "no number"},
		{"Mi", 0, "no number"},
		{"100MB", 0, "suffix"},
		{"100mi", 0, "suffix"},
		{"1m", 0, "suffix"},
		{"1K", 0, "suffix"},
		{"-5Mi", 0, "suffix"},
		{"1..5Mi", 0, "decimal point"},
	}
	for _, tt := range tests {
		got, err := ParseMemory(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseMemory(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	cpu := map[int64]string{0: "0", 1: "1m", 300: "300m", 1000: "1", 1500: "1500m", 2000: "2"}
	for in, want := range cpu {
		if got := FormatCPU(in); got != want {
			t.Errorf("FormatCPU(%d) = %q, want %q", in, got, want)
		}
	}
	mem := map[int64]string{0: "0", 1: "1", 1000: "1000", 1024: "1Ki", 100 << 20: "100Mi", 3 << 29: "1536Mi", 1 << 30: "1Gi", 1 << 40: "1Ti", 1<<20 + 1: "1048577"}
	for in, want := range mem {
		if got := FormatMemory(in); got != want {
			t.Errorf("FormatMemory(%d) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseCPU(f *testing.F) {
	for _, s := range []string{"0", "300m", "1.5", ".5", "1024", "0.0001", "9999999999999999999", "1.2.3", "m", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseCPU(s)
		if err != nil {
			return
		}
		if v < 0 || v > MaxCPUMillis {
			t.Fatalf("ParseCPU(%q) = %d, out of range", s, v)
		}
		back, err := ParseCPU(FormatCPU(v))
		if err != nil || back != v {
			t.Fatalf("ParseCPU(FormatCPU(%d)) = %d, %v", v, back, err)
		}
	})
}

func FuzzParseMemory(f *testing.F) {
	for _, s := range []string{"0", "100Mi", "1.5Gi", "500M", "1Ti", "0.5", "1..5", "Ki", "18446744073709551616"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseMemory(s)
		if err != nil {
			return
		}
		if v < 0 || v > MaxMemBytes {
			t.Fatalf("ParseMemory(%q) = %d, out of range", s, v)
		}
		back, err := ParseMemory(FormatMemory(v))
		if err != nil || back != v {
			t.Fatalf("ParseMemory(FormatMemory(%d)) = %d, %v", v, back, err)
		}
	})
}

func FuzzParseUpdate(f *testing.F) {
	for _, s := range []string{"cpu=300m memory=100Mi", "cpu=1\n# c\nmemory=1", "cpu=1,cpu=2", "x", "=", "cpu="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUpdate(strings.NewReader(s))
		if err != nil {
			return
		}
		// What parsed must print and parse back to the same targets.
		tg := u.Apply(Targets{CPUMillis: 7, MemBytes: 7})
		back, err := ParseUpdate(strings.NewReader(tg.String()))
		if err != nil || back.Apply(Targets{}) != tg {
			t.Fatalf("%q -> %v -> %v, %v", s, tg, back.Apply(Targets{}), err)
		}
	})
}
