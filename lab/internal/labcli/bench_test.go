package labcli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestBenchAgentFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "agent", "--layout", "v3"}, `--layout "v3": want v1 or v2`},
		{[]string{"bench", "agent", "--containers", "0"}, "--containers 0 is out of range"},
		{[]string{"bench", "agent", "--duration", "10ms"}, "--duration 10ms is shorter than --interval 1s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tc.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}
