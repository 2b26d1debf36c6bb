package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

type opts struct {
	n   int
	ran bool
}

func (o *opts) AddFlags(fs *pflag.FlagSet) { fs.IntVar(&o.n, "n", 1, "a number, 1 to 9") }
func (o *opts) Validate() error {
	if o.n < 1 || o.n > 9 {
		return errors.New("--n must be 1 to 9")
	}
	return nil
}

func TestMain(t *testing.T) {
	for _, c := range []struct {
		name    string
		args    []string
		runErr  error
		code    int
		ran     bool
		message string
	}{
		{name: "runs", args: []string{"--n", "3"}, code: 0, ran: true},
		{name: "help", args: []string{"--help"}, code: 0, message: "Usage: x [flags]"},
		{name: "version", args: []string{"--version", "--n", "0"}, code: 0},
		{name: "bad flag", args: []string{"--m"}, code: ExitUsage, message: "x: unknown flag: --m"},
		{name: "arguments", args: []string{"extra"}, code: ExitUsage, message: `x: unexpected arguments ["extra"]`},
		{name: "invalid", args: []string{"--n", "0"}, code: ExitUsage, message: "x: --n must be 1 to 9"},
		{name: "run fails", args: nil, runErr: errors.New("boom"), code: ExitFailed, ran: true, message: "x: boom"},
		{name: "bad logging format", args: []string{"--logging-format", "xml"}, code: ExitUsage, message: `x: logging flags: format: Invalid value: "xml"`},
		{name: "bad verbosity", args: []string{"-v", "high"}, code: ExitUsage, message: `invalid argument "high" for "-v, --v" flag`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o := &opts{}
			code := Main("x", "x [flags]", c.args, &stderr, o, func(ctx context.Context) error {
				o.ran = true
				if ctx.Err() != nil {
					t.Error("context ended before run")
				}
				return c.runErr
			})
			if code != c.code || o.ran != c.ran {
				t.Errorf("code %d ran %v, want %d %v (stderr %q)", code, o.ran, c.code, c.ran, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.message) {
				t.Errorf("stderr %q does not say %q", stderr.String(), c.message)
			}
		})
		resetLogging(t)
	}
}

// resetLogging undoes what Main applied, so that the next Main may apply
// other logging flags (component-base refuses a second, different one).
func resetLogging(t *testing.T) {
	t.Helper()
	if err := logsapi.ResetForTest(nil); err != nil {
		t.Fatal(err)
	}
}

// TestLogging: the logging flags reach klog.Background(), the logger the
// components use: the format (text or JSON) and -v.
func TestLogging(t *testing.T) {
	for _, c := range []struct {
		name      string
		args      []string
		want      []string
		wantNever []string
	}{
		{name: "text, v0", args: nil, want: []string{`"hello" k=1`}, wantNever: []string{"detail", `"msg"`}},
		{name: "text, v2", args: []string{"-v", "2"}, want: []string{`"hello" k=1`, `"detail"`}},
		{name: "json, v2", args: []string{"--logging-format=json", "--v=2"}, want: []string{`"msg":"hello","v":0,"k":1`, `"msg":"detail","v":2`}},
		{name: "json, v0", args: []string{"--logging-format", "json"}, want: []string{`"msg":"hello"`}, wantNever: []string{"detail"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer resetLogging(t)
			out := captureStderr(t, func() {
				code := Main("x", "x", c.args, io.Discard, &opts{n: 1}, func(context.Context) error {
					log := klog.Background()
					log.Info("hello", "k", 1)
					log.V(2).Info("detail")
					return nil
				})
				if code != 0 {
					t.Errorf("exit %d", code)
				}
			})
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("log %q does not say %q", out, w)
				}
			}
			for _, w := range c.wantNever {
				if strings.Contains(out, w) {
					t.Errorf("log %q says %q", out, w)
				}
			}
		})
	}
}

// captureStderr returns what f wrote to os.Stderr (where component-base's
// loggers write unless split streams are asked for).
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	func() {
		defer func() { os.Stderr = saved }()
		f()
		klog.Flush()
	}()
	w.Close()
	return string(<-done)
}
