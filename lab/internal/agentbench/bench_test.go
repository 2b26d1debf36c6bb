package agentbench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestRunPrintsFigures(t *testing.T) {
	o := NewOptions()
	o.Containers, o.Interval, o.Duration, o.Layout = 5, 250*time.Millisecond, 600*time.Millisecond, "v1"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"5 containers (5 tracked)", "% of one core", "passes ", "VmRSS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestArgsRoundTrip(t *testing.T) {
	o := NewOptions()
	o.Containers, o.Interval, o.Duration, o.Layout, o.History = 7, 2*time.Second, time.Minute, "v1", 30
	got := NewOptions()
	fs := newFlagSet(got)
	if err := fs.Parse(o.Args()); err != nil {
		t.Fatal(err)
	}
	if *got != *o {
		t.Errorf("parsed %+v, want %+v", *got, *o)
	}
}

func newFlagSet(o *Options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	o.AddFlags(fs)
	return fs
}
