package daemon

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
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
	}
}
