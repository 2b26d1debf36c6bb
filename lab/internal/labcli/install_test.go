package labcli

import (
	"bytes"
	"strings"
	"testing"
)

// TestInstallBadInput: bad flags, and a lab that is not up, are errors that
// say so before anything is pushed or installed.
func TestInstallBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"install", "--timeout=-1s"}, "--timeout must be positive"},
		{[]string{"install", "--kubernetes-version", "1.x"}, "--kubernetes-version must look like"},
		{[]string{"uninstall", "--timeout=0s"}, "--timeout must be positive"},
		// No lab in dir: no kubeconfig to load, or no API server answering.
		{[]string{"install"}, "kubeconfig"},
		{[]string{"uninstall"}, "kubeconfig"},
	} {
		var out bytes.Buffer
		root := newRootCommand(&out, &out)
		// Never the default --dir: a lab may be up there.
		root.SetArgs(append(c.args, "--dir", dir))
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("snug-lab %s: %v, want an error mentioning %q", strings.Join(c.args, " "), err, c.want)
		}
		if strings.Contains(out.String(), "pushed") || strings.Contains(out.String(), "helm upgrade") {
			t.Errorf("snug-lab %s went on:\n%s", strings.Join(c.args, " "), out.String())
		}
	}
}
