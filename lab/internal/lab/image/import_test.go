package image

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestImportContainerd imports the lab images into a real containerd: the
// only proof that the archive format is right. It runs when
// SNUG_TEST_CONTAINERD_SOCK names a containerd socket and ctr and go are on
// PATH. It imports into the namespace SNUG_TEST_CONTAINERD_NAMESPACE
// (default snug-image-test, so a running lab's k8s.io is left alone),
// checks the names, mounts two of the images when root, and removes them.
func TestImportContainerd(t *testing.T) {
	sock := os.Getenv("SNUG_TEST_CONTAINERD_SOCK")
	if sock == "" {
		t.Skip("SNUG_TEST_CONTAINERD_SOCK not set")
	}
	if _, err := exec.LookPath("ctr"); err != nil {
		t.Skip("no ctr (apt-get install containerd)")
	}
	ns := os.Getenv("SNUG_TEST_CONTAINERD_NAMESPACE")
	if ns == "" {
		ns = "snug-image-test"
	}
	ctr := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ctr", append([]string{"--address", sock, "-n", ns}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	dir := t.TempDir()
	load := filepath.Join(dir, "snug-load")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", load, "github.com/snug-dev/snug/lab/cmd/snug-load")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building snug-load: %v\n%s", err, out)
	}
	imgs, err := LabImages(staticBusybox(t), load)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteArchive(&buf, imgs); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "lab.tar")
	if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	names := []string{BusyboxName, PauseName, SnugLoadName}
	t.Cleanup(func() {
		_ = exec.Command("ctr", append([]string{"--address", sock, "-n", ns, "images", "rm"}, names...)...).Run()
	})
	t.Logf("ctr images import:\n%s", ctr("images", "import", archive))

	listed := strings.Fields(ctr("images", "ls", "-q"))
	for _, n := range names {
		if !contains(listed, n) {
			t.Errorf("image %s not listed; ctr images ls -q: %v", n, listed)
		}
	}
	if os.Geteuid() != 0 {
		return
	}
	// Mounting unpacks into the default snapshotter and shows the rootfs.
	for _, c := range []struct{ image, path string }{
		{BusyboxName, "bin/sh"},
		{SnugLoadName, "snug-load"},
	} {
		mnt := t.TempDir()
		ctr("images", "mount", c.image, mnt)
		_, err := os.Lstat(filepath.Join(mnt, c.path))
		ctr("images", "unmount", "--rm", mnt)
		if err != nil {
			t.Errorf("%s mounted: %v", c.image, err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
