package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunFlags(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"--help"}, 0, "-control-dir"},
		{[]string{"--bogus"}, 2, "flag provided but not defined"},
		{[]string{"extra"}, 2, "unexpected arguments"},
		{[]string{"--cpu", "lots", "--listen", "", "--control-dir", "/nonexistent"}, 1, `snug-load: --cpu: parsing cpu "lots"`},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if got := run(context.Background(), tt.args, &stdout, &stderr); got != tt.wantCode {
			t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, got, tt.wantCode, stderr.String())
		}
		if !strings.Contains(stderr.String(), tt.wantErr) {
			t.Errorf("run(%q) stderr %q, want it to contain %q", tt.args, stderr.String(), tt.wantErr)
		}
	}
}

func TestRunPause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := run(ctx, []string{"pause"}, &bytes.Buffer{}, &bytes.Buffer{}); got != 0 {
		t.Errorf("run(pause) = %d, want 0", got)
	}
}
