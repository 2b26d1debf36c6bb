package labcli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestImagesBuild(t *testing.T) {
	bb, err := os.ReadFile("/bin/busybox") // a static stand-in for the binaries
	if err != nil {
		t.Skip("no /bin/busybox (apt-get install busybox-static)")
	}
	bin, out := t.TempDir(), t.TempDir()
	for i, name := range []string{"snug-agent", "snug-controller"} {
		if err := os.WriteFile(filepath.Join(bin, name), append(bb, byte(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"images", "build", "--bin", bin, "--out", out, "--version", "v9.9.9", "--registry", "r.example:5000"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"r.example:5000/snug-dev/snug-agent:v9.9.9 ", "r.example:5000/snug-dev/snug-controller:v9.9.9 ", " sha256:", " MiB ("} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, stdout.String())
		}
	}
	for _, f := range []string{"oci/index.json", "oci/oci-layout", "snug-agent.tar", "snug-controller.tar"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestImagesErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"images", "push", "--bin", t.TempDir()}, "push needs --registry"},
		{[]string{"images", "build", "--bin", t.TempDir(), "--out", t.TempDir()}, "make build builds it"},
		{[]string{"images", "build", "--bin", t.TempDir(), "--version", "a+b"}, "not a valid image tag"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Run(context.Background(), tc.args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want an error saying %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
